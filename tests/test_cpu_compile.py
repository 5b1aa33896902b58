"""Compiled or eager on a CPU: the choice, the toolchain check behind it, and what reaches the launch."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from backend.engine import cpu_compile, vllm_command
from backend.engine.launch_facts import flag_value
from backend.engine.vllm_command import build_launch
from backend.server import compile_cache
from backend.server.processes import free_port
from backend.server.supervisor import phase_of
from tests.conftest import make_settings


def _launch(tmp_path: Path, monkeypatch, problem: str | None, **settings):
    monkeypatch.setattr(cpu_compile, "toolchain_problem", lambda _python: problem)
    return build_launch(make_settings(tmp_path, device="cpu", **settings), api_key="k")


def test_a_cpu_with_a_toolchain_runs_compiled_with_vllms_older_cache(tmp_path: Path, monkeypatch) -> None:
    launch = _launch(tmp_path, monkeypatch, None)
    assert "--enforce-eager" not in launch.argv
    assert launch.env["VLLM_USE_AOT_COMPILE"] == "0"  # vLLM 0.32's AOT cache fails to load on CPU
    assert launch.compile.startswith("torch.compile") and "first start" in launch.compile


def test_without_a_compiler_the_cpu_starts_eager_and_says_what_to_install(tmp_path: Path, monkeypatch) -> None:
    launch = _launch(tmp_path, monkeypatch, "no C++ compiler (g++) was found")
    assert "--enforce-eager" in launch.argv and "VLLM_USE_AOT_COMPILE" not in launch.env
    assert launch.compile.startswith("eager: no C++ compiler") and "install g++" in launch.compile


def test_the_users_setting_wins_and_a_forced_compile_is_warned_about(tmp_path: Path, monkeypatch) -> None:
    def not_asked(_python: str) -> str:
        raise AssertionError("the toolchain is not looked at when eager is asked for")

    monkeypatch.setattr(cpu_compile, "toolchain_problem", not_asked)
    eager = build_launch(make_settings(tmp_path, device="cpu", enforce_eager=True), api_key="k")
    assert "--enforce-eager" in eager.argv and "set by RCHAT_ENFORCE_EAGER" in eager.compile
    forced = _launch(tmp_path, monkeypatch, "no C++ compiler (g++) was found", enforce_eager=False)
    assert "--enforce-eager" not in forced.argv and "warning: no C++ compiler" in forced.compile


def test_a_gpu_keeps_its_own_rule(tmp_path: Path) -> None:
    launch = build_launch(make_settings(tmp_path, device="cuda"), api_key="k")
    assert "--enforce-eager" not in launch.argv and launch.compile == ""
    assert "VLLM_USE_AOT_COMPILE" not in launch.env


def test_the_toolchain_check_finds_a_missing_compiler_and_missing_headers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    assert "no C++ compiler (no-such-compiler-here)" in cpu_compile.toolchain_problem("python3")
    monkeypatch.delenv("CXX")
    if not cpu_compile.shutil.which("g++"):
        pytest.skip("this machine has no g++")
    fake = tmp_path / "python"  # an interpreter whose include folder has no Python.h
    fake.write_text(f"#!/bin/sh\necho {tmp_path / 'include'}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert "Python headers (Python.h)" in cpu_compile.toolchain_problem(str(fake))


def test_the_project_interpreter_can_compile_here(tmp_path: Path) -> None:
    """The real check on this machine: g++ and the Python headers of the interpreter vLLM runs on."""
    vllm_python = vllm_command.vllm_python(make_settings(tmp_path))
    if not cpu_compile.shutil.which("g++"):
        pytest.skip("this machine has no g++")
    assert cpu_compile.toolchain_problem(vllm_python) is None


def test_the_start_up_shows_the_compile_as_its_own_phase() -> None:
    log = "Loading weights took 0.17 seconds\n[cpu_model_runner.py:87] Warming up model for the compilation...\n"
    assert phase_of(log).startswith("compiling the model")
    assert phase_of(log + "CPU KV cache size: 46,592 tokens\n") == "allocating the KV cache"


def test_the_compiled_kernels_are_kept_in_the_users_cache_not_in_tmp(tmp_path: Path, monkeypatch) -> None:
    """Inductor's default, /tmp/torchinductor_<user>, goes with a reboot; a restart must not compile again."""
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    launch = _launch(tmp_path, monkeypatch, None)
    assert launch.env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "xdg" / "rchat" / "torchinductor")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))  # the user's own choice wins
    assert _launch(tmp_path, monkeypatch, None).env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
    assert "TORCHINDUCTOR_CACHE_DIR" not in _launch(tmp_path, monkeypatch, None, enforce_eager=True).env


def test_a_start_says_whether_it_compiles_or_loads_what_an_earlier_start_compiled(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    launch, model = _launch(tmp_path, monkeypatch, None), make_settings(tmp_path).resolved_model
    folder = Path(launch.env["TORCHINDUCTOR_CACHE_DIR"])
    key = compile_cache.launch_key(launch.argv, launch.env, model)
    assert compile_cache.compile_phase(key, folder) == compile_cache.FIRST_COMPILE
    compile_cache.remember(key, folder, took_s=95.0)
    assert compile_cache.compile_phase(key, folder) == compile_cache.CACHED
    # Another number format is another graph, compiled anew (float32 is the default on some hosts: AVX2 only)
    other_dtype = "bfloat16" if flag_value(launch.argv, "--dtype") == "float32" else "float32"
    changed = _launch(tmp_path, monkeypatch, None, dtype=other_dtype)
    assert flag_value(changed.argv, "--dtype") == other_dtype
    assert (
        compile_cache.compile_phase(compile_cache.launch_key(changed.argv, changed.env, model), folder)
        == compile_cache.FIRST_COMPILE
    )
    # Ports and the API key do not change the graph: a restart on other ports loads it.
    other = _launch(tmp_path, monkeypatch, None, vllm_port=free_port())
    assert compile_cache.launch_key(other.argv, {**other.env, "VLLM_API_KEY": "x"}, model) == key
