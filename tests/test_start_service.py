"""start_service.sh end to end: chat page up, and no process or port left behind after any signal."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import httpx
import psutil
import pytest

from backend import processes
from backend.settings import PROJECT_ROOT
from tests.conftest import free_port

pytestmark = pytest.mark.server
READY = "chat ready at"


class RunningService:
    """start_service.sh started with its own ports; remembers every process it spawned."""

    def __init__(self, tmp_path) -> None:
        self.vllm_port, self.ui_port = free_port(), free_port()
        env = {**os.environ, "RCHAT_VLLM_PORT": str(self.vllm_port), "RCHAT_UI_PORT": str(self.ui_port),
               "RCHAT_LOG_DIR": str(tmp_path)}
        self.proc = subprocess.Popen([str(PROJECT_ROOT / "start_service.sh")], env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.lines: list[str] = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            if READY in line:
                self.ready.set()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_ready(self, timeout: float = 600) -> None:
        assert self.ready.wait(timeout), f"never ready:\n{self.output}"

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def __enter__(self) -> RunningService:
        return self

    def __exit__(self, *exc: object) -> None:
        """Whatever the test did: stop the script if it still runs (SIGTERM, then SIGKILL)."""
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the watchdog then stops what the launcher started


def _all_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return []
        time.sleep(0.5)
    return alive


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_signal_to_start_script_leaves_nothing_running(tmp_path, sig: signal.Signals) -> None:
    with RunningService(tmp_path) as service:
        service.wait_ready()
        assert httpx.get(f"http://127.0.0.1:{service.ui_port}/").status_code == 200
        spawned = service.descendants()
        names = " ".join(" ".join(p.cmdline()) for p in spawned)
        assert "vllm" in names and "chainlit" in names
        assert "[setup] creating" not in service.output  # a second run installs nothing
        os.kill(service.proc.pid, sig)
        # After SIGKILL the launcher cannot clean up: the watchdog and parent-death signal must.
        left = _all_gone(spawned, timeout=60)
        assert not left, f"still running after {sig.name}: {[p.cmdline()[:3] for p in left]}"
        assert processes.port_is_free("127.0.0.1", service.vllm_port)
        assert processes.port_is_free("127.0.0.1", service.ui_port)
        if sig != signal.SIGKILL:
            assert service.proc.wait(timeout=30) == 128 + sig
            assert "all stopped" in service.output


def test_a_crashed_chat_ui_stops_vllm(tmp_path) -> None:
    with RunningService(tmp_path) as service:
        service.wait_ready()
        spawned = service.descendants()
        ui = next(p for p in spawned if "chainlit" in " ".join(p.cmdline()))
        ui.kill()
        assert service.proc.wait(timeout=60) != 0
        assert not _all_gone(spawned, timeout=30)
        assert "the chat UI exited" in service.output
        assert processes.port_is_free("127.0.0.1", service.vllm_port)


def test_a_crashed_vllm_is_restarted_and_answers_again(tmp_path) -> None:
    with RunningService(tmp_path) as service:
        service.wait_ready()
        engine = next(p for p in service.descendants() if "vllm.entrypoints" in " ".join(p.cmdline()))
        os.killpg(engine.pid, signal.SIGKILL)  # the whole vLLM group, as an out-of-memory kill would
        deadline = time.monotonic() + 300
        while "vLLM is healthy again" not in service.output:
            assert time.monotonic() < deadline, service.output
            assert service.proc.poll() is None, service.output
            time.sleep(1)
        assert "restarting in" in service.output
        assert httpx.get(f"http://127.0.0.1:{service.vllm_port}/health").status_code == 200
        status = (tmp_path / f"backend-status-{service.ui_port}.json").read_text()
        assert '"state": "ready"' in status
