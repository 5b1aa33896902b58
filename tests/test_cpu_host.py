"""The CPU defaults chosen from recorded /proc/cpuinfo flag sets of hosts we have met (tests/cpuinfo/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from backend.engine import cpu_host
from backend.engine.vllm_command import build_argv, build_env, build_launch, dtype_reason
from tests.conftest import make_settings

RECORDED = Path(__file__).parent / "cpuinfo"


def host(name: str) -> tuple[frozenset[str], str]:
    text = (RECORDED / name).read_text()
    return cpu_host.parse_flags(text), cpu_host.parse_model_name(text)


@pytest.mark.parametrize(
    ("name", "dtype", "why"),
    [
        ("amd_epyc_avx512_bf16.txt", "bfloat16", "AVX-512 bf16 and no AMX"),
        ("intel_xeon_amx.txt", "bfloat16", "oneDNN's AMX kernels"),
        ("intel_haswell_avx2.txt", "float32", "no AVX-512 bf16"),
        ("amd_epyc_avx2.txt", "float32", "no AVX-512 bf16"),  # AVX2 only (met 2026-12-07)
    ],
)
def test_dtype_follows_the_cpu_flags(name: str, dtype: str, why: str) -> None:
    flags, model = host(name)
    assert model != "unknown CPU" and "avx2" in flags
    choice = cpu_host.choose(flags, preloads=[])
    assert choice.dtype == dtype
    assert why in choice.reason
    assert "VLLM_CPU_OMP_THREADS_BIND" not in choice.env  # vLLM's own thread layout by default


def test_amx_hosts_leave_onednn_its_amx_kernels_unless_told_and_then_ask_for_tile_state() -> None:
    amx, _ = host("intel_xeon_amx.txt")
    default = cpu_host.choose(amx, preloads=[cpu_host.TCMALLOC])
    assert default.dtype == "bfloat16" and not {"ONEDNN_MAX_CPU_ISA", "PYTHONPATH"} & set(default.env)
    assert default.env["LD_PRELOAD"] == str(cpu_host.TCMALLOC)
    capped = cpu_host.choose(amx, preloads=[cpu_host.TCMALLOC], onednn_amx=False)
    assert capped.dtype == "bfloat16" and "oneDNN kept off AMX" in capped.reason
    env = capped.env
    assert env["ONEDNN_MAX_CPU_ISA"] == "AVX512_CORE_BF16"
    assert env["LD_PRELOAD"] == str(cpu_host.TCMALLOC)
    assert (Path(env["PYTHONPATH"]) / "sitecustomize.py").is_file()
    for other in ("amd_epyc_avx512_bf16.txt", "intel_haswell_avx2.txt"):
        env = cpu_host.choose(host(other)[0], preloads=[], onednn_amx=False).env
        assert not {"ONEDNN_MAX_CPU_ISA", "PYTHONPATH"} & set(env)


def test_the_amx_boot_file_runs_in_a_plain_python(tmp_path: Path) -> None:
    """What vLLM's processes run first on an AMX host: it must import cleanly anywhere (no AMX here
    is fine: the request then fails quietly) and leave the interpreter working."""
    env = {"PYTHONPATH": str(cpu_host.AMX_BOOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", "import sitecustomize, sys; print(sitecustomize.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == str(cpu_host.AMX_BOOT / "sitecustomize.py")
    assert out.stderr == ""


def test_every_core_is_bound_only_when_given() -> None:
    """Binding: every CPU bound, none reserved, OpenMP threads that sleep at once; said at start."""
    flags, _ = host("intel_xeon_amx.txt")
    default = cpu_host.choose(flags, preloads=[])
    assert not {"VLLM_CPU_OMP_THREADS_BIND", "KMP_BLOCKTIME"} & set(default.env)
    assert "vLLM's own" in default.threads
    every = cpu_host.choose(flags, preloads=[], all_cores=[1, 0], onednn_amx=False)
    assert every.env["VLLM_CPU_OMP_THREADS_BIND"] == "0,1" and every.env["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
    assert every.env["KMP_BLOCKTIME"] == "0"
    assert every.env["ONEDNN_MAX_CPU_ISA"] == "AVX512_CORE_BF16"  # the dtype's own env is kept
    assert "every core (0,1)" in every.threads and "RCHAT_CPU_ALL_CORES" in every.threads
    one = cpu_host.choose(flags, preloads=[], all_cores=[3])  # one CPU: nothing to bind
    assert "VLLM_CPU_OMP_THREADS_BIND" not in one.env and "vLLM's own" in one.threads


def test_the_all_cores_setting_reaches_the_launch_with_intel_openmp(tmp_path: Path, monkeypatch) -> None:
    venv_python = tmp_path / "venv" / "bin" / "python"
    (tmp_path / "venv" / "lib").mkdir(parents=True)
    (tmp_path / "venv" / "lib" / "libiomp5.so").write_bytes(b"")
    flags, _ = host("amd_epyc_avx512_bf16.txt")
    monkeypatch.setattr(cpu_host, "read_host", lambda: (flags, "recorded", [0, 1]))
    launch = build_launch(
        make_settings(tmp_path, vllm_python=str(venv_python), device="cpu", cpu_all_cores=True), api_key="k"
    )
    assert launch.env["LD_PRELOAD"].endswith("libiomp5.so") and launch.env["VLLM_CPU_OMP_THREADS_BIND"] == "0,1"
    assert "every core" in launch.threads
    off = build_launch(make_settings(tmp_path, vllm_python=str(venv_python), device="cpu"), api_key="k")
    assert "libiomp5" not in off.env.get("LD_PRELOAD", "") and "vLLM's own" in off.threads
    assert "VLLM_CPU_OMP_THREADS_BIND" not in off.env  # vLLM's own layout by default


def test_every_core_only_when_asked_and_there_are_two() -> None:
    assert cpu_host.cores_to_bind(True, [1, 0]) == [0, 1]
    assert cpu_host.cores_to_bind(False, [0, 1]) == []
    assert cpu_host.cores_to_bind(True, [5]) == []  # one CPU: nothing to bind


# The real server on every core: tests/test_supervisor.py (one start, shared with the stop test).


def test_intel_openmp_is_preloaded_only_when_asked(tmp_path: Path) -> None:
    venv_python = tmp_path / "venv" / "bin" / "python"
    (tmp_path / "venv" / "lib").mkdir(parents=True)
    (tmp_path / "venv" / "lib" / "libiomp5.so").write_bytes(b"")
    assert all(p.name != "libiomp5.so" for p in cpu_host.find_preloads(str(venv_python)))
    found = cpu_host.find_preloads(str(venv_python), intel_openmp=True)
    assert found[-1] == tmp_path / "venv" / "lib" / "libiomp5.so"
    env = cpu_host.choose(frozenset(), preloads=found).env
    assert env["LD_PRELOAD"].split(":")[-1].endswith("libiomp5.so")


def test_no_flags_line_means_the_safe_default() -> None:
    assert cpu_host.parse_flags("processor : 0\n") == frozenset()
    assert cpu_host.choose(frozenset(), preloads=[]).dtype == "float32"


def test_the_host_choice_reaches_the_vllm_command(tmp_path: Path) -> None:
    flags, _ = host("amd_epyc_avx512_bf16.txt")
    choice = cpu_host.choose(flags, preloads=[cpu_host.TCMALLOC])
    s = make_settings(tmp_path)
    argv = build_argv(s, device="cpu", host=choice)
    assert argv[argv.index("--dtype") + 1] == "bfloat16"
    assert build_env(s, api_key="k", host=choice)["LD_PRELOAD"] == str(cpu_host.TCMALLOC)
    assert "--dtype" not in build_argv(s, device="cuda", host=None)


def test_an_explicit_dtype_wins_but_is_warned_about(tmp_path: Path) -> None:
    flags, _ = host("intel_xeon_amx.txt")
    choice = cpu_host.choose(flags, preloads=[])
    s = make_settings(tmp_path, dtype="float16")
    argv = build_argv(s, device="cpu", host=choice)
    assert argv[argv.index("--dtype") + 1] == "float16"
    reason = dtype_reason(s, "cpu", choice)
    assert "RCHAT_DTYPE" in reason and "warning" in reason and "bfloat16" in reason
    assert "warning" not in dtype_reason(make_settings(tmp_path, dtype="bfloat16"), "cpu", choice)
