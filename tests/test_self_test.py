"""The start-up self-test: a wrong answer relaunches in float32 and says why; the real server passes it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from backend.engine import cpu_host
from backend.engine.cpu_host import HostChoice
from backend.engine.vllm_command import LaunchSpec, build_argv, build_env
from backend.server import self_test
from backend.server.supervisor import VLLMServer
from backend.settings import PROJECT_ROOT, Settings
from tests.conftest import SharedServer, make_settings

BF16_HOST = HostChoice(dtype="bfloat16", reason="test: a host where bf16 was chosen")
RECORDED = Path(__file__).parent / "cpuinfo"


@pytest.fixture
def on_host(monkeypatch: pytest.MonkeyPatch):
    """Make the self-test see a recorded CPU (tests/cpuinfo/) instead of this machine's, which changes."""

    def use(name: str) -> None:
        flags = cpu_host.parse_flags((RECORDED / name).read_text())
        monkeypatch.setattr(cpu_host, "read_host", lambda: (flags, name, [0, 1]))

    return use


def fake_settings(tmp_path: Path, **overrides: object) -> Settings:
    """Settings whose `vllm_python` runs tests/fake_wrong_dtype_vllm.py on vLLM's own argv."""
    wrapper = tmp_path / "fake-python"
    wrapper.write_text(
        f"#!/bin/sh\ncd {PROJECT_ROOT}\nshift 2\n"  # drop `-m vllm...api_server`
        f'exec {sys.executable} -m tests.fake_wrong_dtype_vllm "$@"\n'
    )
    wrapper.chmod(0o755)
    return make_settings(tmp_path, vllm_python=str(wrapper), device="cpu", startup_timeout=60, **overrides)


def bf16_launch(settings: Settings) -> LaunchSpec:
    """The launch a bf16-choosing host (an AMD EPYC, say) would build."""
    return LaunchSpec(
        argv=build_argv(settings, device="cpu", host=BF16_HOST),
        env=build_env(settings, api_key="k", host=BF16_HOST),
        device="cpu",
        dtype="bfloat16",
        why=BF16_HOST.reason,
    )


def restart(server: VLLMServer, said: list[str]) -> tuple[str | None, str]:
    """Start the server again with its (switched) launch, as the launcher's supervision loop does."""
    server.stop()
    server.start()
    server.wait_healthy()
    return self_test.after_healthy(server, say=said.append)


def test_a_wrong_answer_in_a_chosen_bf16_switches_to_float32_which_answers_right(tmp_path: Path, on_host) -> None:
    """The launcher's after-healthy hook: a wrong answer in a chosen bf16 switches the launch and says why;
    started again with that launch (as the launcher's supervision loop does: tests/test_supervision.py),
    the server answers right."""
    on_host("amd_epyc_avx512_bf16.txt")
    settings = fake_settings(tmp_path)
    said: list[str] = []
    with VLLMServer(settings, api_key="k", launch=bf16_launch(settings)) as server:
        reason, warning = self_test.after_healthy(server, say=said.append)
        assert reason and "float32" in reason and server.launch.dtype == "float32"
        assert "--dtype float32" in " ".join(server.launch.argv)
        assert restart(server, said) == (None, "")
    assert "float32" in warning and "bfloat16" in warning and "Parlement" in warning
    assert said[-1].startswith("self-test passed in float32")


def test_on_amx_a_wrong_bf16_answer_first_keeps_onednn_off_amx(tmp_path: Path, on_host) -> None:
    """The default on AMX (oneDNN's AMX kernels) answering wrong, a fault the fake lifts once
    ONEDNN_MAX_CPU_ISA is set: bf16 stays, oneDNN is capped, the AMX tile request is on vLLM's path,
    and the page gets no warning."""
    on_host("intel_xeon_amx.txt")
    settings = fake_settings(tmp_path)
    said: list[str] = []
    with VLLMServer(settings, api_key="k") as server:
        assert server.launch.dtype == "bfloat16" and "ONEDNN_MAX_CPU_ISA" not in server.launch.env
        reason, warning = self_test.after_healthy(server, say=said.append)
        assert reason and "oneDNN kept off AMX" in reason and warning == ""
        assert server.launch.dtype == "bfloat16" and server.launch.env["ONEDNN_MAX_CPU_ISA"] == "AVX512_CORE_BF16"
        assert server.launch.env["PYTHONPATH"] == str(cpu_host.AMX_BOOT)
        assert restart(server, said) == (None, "")
    assert said[-1].startswith("self-test passed in bfloat16")


def test_on_amx_still_wrong_with_onednn_capped_falls_back_to_float32(
    tmp_path: Path, on_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_host("intel_xeon_amx.txt")
    monkeypatch.setenv("FAKE_SALAD_EVEN_CAPPED", "1")  # inherited by the fake server
    settings = fake_settings(tmp_path)
    said: list[str] = []
    with VLLMServer(settings, api_key="k") as server:
        reason, _ = self_test.after_healthy(server, say=said.append)
        assert reason and "oneDNN kept off AMX" in reason
        reason, warning = restart(server, said)
        assert reason and "float32" in reason and server.launch.dtype == "float32"
        assert "float32" in warning and "bfloat16" in warning
        assert restart(server, said) == (None, "")
    assert said[-1].startswith("self-test passed in float32")


def test_an_explicit_dtype_is_kept_and_warned_about(tmp_path: Path, on_host) -> None:
    on_host("amd_epyc_avx512_bf16.txt")
    settings = fake_settings(tmp_path, dtype="bfloat16")
    said: list[str] = []
    with VLLMServer(settings, api_key="k") as server:
        reason, warning = self_test.after_healthy(server, say=said.append)
        assert reason is None and server.launch.dtype == "bfloat16"
    assert "probably wrong" in warning and "RCHAT_DTYPE" in warning
    assert said and said[0].startswith("warning:")


def test_other_models_and_external_servers_are_not_tested(tmp_path: Path) -> None:
    s = make_settings(tmp_path, base_url="http://127.0.0.1:9")
    assert not self_test.applies(VLLMServer(s, api_key="k"))


@pytest.mark.server
def test_the_real_server_passes_in_the_hosts_dtype(vllm_server: SharedServer) -> None:
    """On this machine, the dtype the host chose answers the long known-answer prompt right."""
    check = self_test.ask(vllm_server.url, vllm_server.api_key, vllm_server.settings.resolved_served_name)
    assert check.ok, check.problem
    assert check.prompt_tokens >= self_test.MIN_PROMPT_TOKENS and not check.problem
    said: list[str] = []
    assert self_test.after_healthy(vllm_server, say=said.append) == (None, "")
    assert said[0].startswith(f"self-test passed in {vllm_server.launch.dtype}")
