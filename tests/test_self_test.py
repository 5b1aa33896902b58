"""The start-up self-test: a wrong answer relaunches in float32 and says why; the real server passes it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from backend.server import self_test
from backend.server.cpu_host import HostChoice
from backend.server.supervisor import VLLMServer
from backend.server.vllm_command import LaunchSpec, build_argv, build_env
from backend.settings import PROJECT_ROOT, Settings
from tests.conftest import make_settings

BF16_HOST = HostChoice(dtype="bfloat16", reason="test: a host where bf16 was chosen")


def fake_settings(tmp_path: Path, **overrides: object) -> Settings:
    """Settings whose `vllm_python` runs tests/fake_wrong_dtype_vllm.py on vLLM's own argv."""
    wrapper = tmp_path / "fake-python"
    wrapper.write_text(f"#!/bin/sh\ncd {PROJECT_ROOT}\nshift 2\n"  # drop `-m vllm...api_server`
                       f"exec {sys.executable} -m tests.fake_wrong_dtype_vllm \"$@\"\n")
    wrapper.chmod(0o755)
    return make_settings(tmp_path, vllm_python=str(wrapper), device="cpu", startup_timeout=60, **overrides)


def bf16_launch(settings: Settings) -> LaunchSpec:
    """The launch a bf16-choosing host (an AMD EPYC, say) would build."""
    return LaunchSpec(argv=build_argv(settings, device="cpu", host=BF16_HOST),
                      env=build_env(settings, api_key="k", host=BF16_HOST), device="cpu", dtype="bfloat16",
                      why=BF16_HOST.reason)


def test_a_wrong_answer_in_a_chosen_bf16_switches_to_float32_which_answers_right(tmp_path: Path) -> None:
    """The launcher's after-healthy hook: a wrong answer in a chosen bf16 switches the launch and says why;
    started again with that launch (as the launcher's supervision loop does: tests/test_supervision.py),
    the server answers right."""
    settings = fake_settings(tmp_path)
    said: list[str] = []
    with VLLMServer(settings, api_key="k", launch=bf16_launch(settings)) as server:
        reason, warning = self_test.after_healthy(server, say=said.append)
        assert reason and "float32" in reason and server.launch.dtype == "float32"
        assert "--dtype float32" in " ".join(server.launch.argv)
        server.stop()
        server.start()
        server.wait_healthy()
        assert self_test.after_healthy(server, say=said.append) == (None, "")
    assert "float32" in warning and "bfloat16" in warning and "Parlement" in warning
    assert said[-1].startswith("self-test passed in float32")


def test_an_explicit_dtype_is_kept_and_warned_about(tmp_path: Path) -> None:
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
def test_the_real_server_passes_in_the_hosts_dtype(vllm_server: VLLMServer) -> None:
    """On this machine, the dtype the host chose answers the long known-answer prompt right."""
    verdict = self_test.ask(vllm_server.url, vllm_server.api_key, vllm_server.settings.resolved_served_name)
    assert verdict.ok, verdict.problem
    assert verdict.prompt_tokens >= self_test.MIN_PROMPT_TOKENS and not verdict.problem
    said: list[str] = []
    assert self_test.after_healthy(vllm_server, say=said.append) == (None, "")
    assert said[0].startswith(f"self-test passed in {vllm_server.launch.dtype}")
