"""The restart policy, the readiness helper and the launcher's state machine, over fake children.

Why fakes (tests/fake_child.py): these tests drive the launcher through sequences a real vLLM cannot
be made to follow on cue and within seconds (exit during a restart, hang past the start-up timeout,
a port taken between two starts, a check after start-up that asks for other settings). The same
paths run end to end against the real vLLM and the real page in tests/test_start_service.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest

from backend.chat.health import describe_down, wait_until_healthy
from backend.cli import cmd_stop
from backend.engine.vllm_command import LaunchSpec
from backend.readiness import Awaited, Readiness, process_gone, wait_ready
from backend.server import processes
from backend.server.launcher import Launcher
from backend.server.pidfile import our_process, write_pidfile
from backend.server.restart_policy import RestartPolicy
from backend.server.supervision import State
from backend.server_status import BackendStatus, read_status, write_status
from tests.conftest import make_settings

FAKE = str(Path(__file__).with_name("fake_child.py"))


# --- the restart policy ---
def test_the_backoff_doubles_from_one_second_and_stops_growing_at_thirty() -> None:
    policy = RestartPolicy(max_restarts=8, window=600)
    delays = [policy.record_crash(now=float(t)).delay for t in range(8)]
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]


def test_more_crashes_than_the_limit_within_the_window_is_giving_up() -> None:
    policy = RestartPolicy(max_restarts=2, window=100)
    decisions = [policy.record_crash(now=t) for t in (0.0, 10.0, 20.0)]
    assert [d.restart for d in decisions] == [True, True, False]
    assert decisions[-1].crashes == 3


def test_crashes_older_than_the_window_are_forgotten() -> None:
    policy = RestartPolicy(max_restarts=1, window=100)
    assert policy.record_crash(now=0.0).restart
    later = policy.record_crash(now=150.0)  # the first crash is out of the window
    assert later.restart and later.crashes == 1 and later.delay == 1


def test_no_restarts_allowed_gives_up_at_the_first_crash() -> None:
    assert not RestartPolicy(max_restarts=0, window=100).record_crash(now=0.0).restart


# --- the readiness helper ---
def _spawn(tmp_path: Path, step: str) -> tuple[subprocess.Popen, int]:
    port = processes.free_port()
    (tmp_path / "script").write_text(step + "\n")
    proc = processes.spawn_group(
        [sys.executable, FAKE, str(port), str(tmp_path / "script")], env=None, log_path=tmp_path / "child.log"
    )
    return proc, port


@pytest.mark.parametrize(
    "step, state",
    [("serve", Readiness.READY), ("exit 0", Readiness.GONE), ("exit 3", Readiness.GONE), ("hang", Readiness.TIMED_OUT)],
)
def test_waiting_ends_on_ready_on_any_exit_or_at_the_deadline(tmp_path, step: str, state: Readiness) -> None:
    proc, port = _spawn(tmp_path, step)
    try:
        outcome = wait_ready(Awaited(f"http://127.0.0.1:{port}/", 5, gone=process_gone(proc)), interval=0.1)
    finally:
        processes.stop_group(proc, grace=1)
    assert outcome.state is state
    if step.startswith("exit"):
        assert outcome.reason == f"exited with code {step.split()[1]}" and outcome.elapsed < 5  # not the deadline


# --- the launcher over fake children ---
class FakeService:
    """A Launcher whose vLLM and page are fake children, run in a thread as `run()` would run it."""

    def __init__(self, tmp_path: Path, vllm: list[str], after_healthy=None, **overrides: object) -> None:
        self.settings = make_settings(tmp_path, data_dir=tmp_path / "data", **overrides)
        self.vllm_script, page_script = tmp_path / "vllm.script", tmp_path / "page.script"
        self.vllm_script.write_text("".join(f"{step}\n" for step in vllm))
        s = self.settings
        self.launch = LaunchSpec(
            argv=[sys.executable, FAKE, str(s.vllm_port), str(self.vllm_script)], env={}, device="cpu"
        )
        self.launcher = Launcher(
            s,
            launch=self.launch,
            page_argv=[sys.executable, FAKE, str(s.ui_port), str(page_script)],
            after_healthy=after_healthy,
        )
        self.code: int | None = None
        self.seen: set[psutil.Process] = set()
        # Other tests' session servers (a real vLLM, the fake OpenAI server) are our children too: not ours to judge.
        self.others = set(psutil.Process().children(recursive=True))
        self.page_down_while_watched = 0
        self._watching = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        threading.Thread(target=self._watch, daemon=True).start()
        self.thread.start()

    def _run(self) -> None:
        self.code = self.launcher.run()

    def _watch(self) -> None:
        """Remembers every process the launcher started, and counts moments the page did not answer."""
        while self._watching:
            self.seen.update(set(psutil.Process().children(recursive=True)) - self.others)
            if self.launcher.page.state is State.RUNNING and not self.page_answers():
                self.page_down_while_watched += 1
            time.sleep(0.2)

    def both_up(self) -> bool:
        return self.status().state == "ready" and self.launcher.page.state is State.RUNNING

    def page_answers(self) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{self.settings.ui_port}/", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def status(self):
        return read_status(self.settings.status_file) or BackendStatus(state="starting")  # not written yet

    def wait_for(self, what, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not what():
            assert time.monotonic() < deadline, f"timed out; status {self.status()}"
            assert self.thread.is_alive() or what(), f"the launcher ended with {self.code}"
            time.sleep(0.1)

    def kill(self, which: str) -> int:
        """SIGKILL to the child's whole group, as the out-of-memory killer would; its pid."""
        pid = (self.launcher.server if which == "vllm" else self.launcher.page.child).proc.pid
        os.killpg(pid, signal.SIGKILL)
        return pid

    def stop(self) -> int:
        self.launcher.request_stop(signal.SIGTERM)
        self.thread.join(timeout=40)
        assert not self.thread.is_alive(), "the launcher did not stop"
        return self.code

    def assert_nothing_left(self) -> None:
        self._watching = False
        alive = [p for p in self.seen if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not alive, [p.cmdline() for p in alive]
        assert processes.port_is_free("127.0.0.1", self.settings.vllm_port)
        assert processes.port_is_free("127.0.0.1", self.settings.ui_port)

    def __enter__(self) -> FakeService:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread.is_alive():
            self.stop()
        self._watching = False


def test_failed_restarts_count_as_crashes_and_the_page_is_restarted_meanwhile(tmp_path, capsys) -> None:
    steps = ["serve", "exit 3", "hang", "serve", "hang"]
    with FakeService(tmp_path, steps, max_restarts=4, startup_timeout=3) as service:
        service.wait_for(service.both_up)
        vllm_pid = service.kill("vllm")
        page_pid = service.kill("page")  # the page dies while vLLM restarts: both are watched
        service.wait_for(lambda: service.page_answers() and service.launcher.page.child.proc.pid != page_pid)
        assert service.status().state == "restarting"  # vLLM's restart goes on meanwhile
        service.wait_for(lambda: service.status().state == "ready")
        assert service.launcher.server.proc.pid != vllm_pid
        said = capsys.readouterr().err
        assert "vLLM exited with code -9; restarting in 1 s" in said
        assert "vLLM exited with code 3 while restarting; restarting in 2 s" in said
        assert "vLLM not ready within 3 s while restarting; restarting in 4 s" in said
        assert "vLLM is healthy again" in said and "the chat page is healthy again" in said
        # Stopped while a restart waits on a hanging vLLM: everything ends within the grace periods.
        service.kill("vllm")
        service.wait_for(lambda: service.launcher.vllm.state is State.STARTING and service.launcher.vllm.restarting)
        assert service.stop() == 128 + signal.SIGTERM
        service.assert_nothing_left()
    assert service.status().state == "stopped"


def test_over_the_limit_the_page_stays_up_and_says_why(tmp_path) -> None:
    with FakeService(tmp_path, ["serve", "exit 1", "hang"], max_restarts=2, startup_timeout=2) as service:
        service.wait_for(service.both_up)
        page_pid = service.launcher.page.child.proc.pid
        service.kill("vllm")
        service.wait_for(lambda: service.status().state == "failed", timeout=40)
        message = describe_down(service.settings)
        assert "down and will not be restarted automatically: vLLM crashed 3 times" in message
        assert "not ready within 2 s while restarting" in message and "./start_service.sh" in message
        time.sleep(1)  # given up, the launcher goes on serving the page
        assert service.thread.is_alive() and service.page_answers()
        assert service.launcher.page.child.proc.pid == page_pid and service.page_down_while_watched == 0
        assert service.stop() == 128 + signal.SIGTERM
        service.assert_nothing_left()
    assert service.status().state == "failed"  # what the page said stays the last word


def test_a_port_taken_between_two_starts_counts_as_a_crash(tmp_path) -> None:
    with FakeService(tmp_path, ["serve"], max_restarts=1) as service:
        service.wait_for(lambda: service.status().state == "ready")
        service.kill("vllm")
        with socket.socket() as squatter:
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            service.wait_for(lambda: _bind(squatter, service.settings.vllm_port))
            squatter.listen()
            service.wait_for(lambda: service.status().state == "failed")
        assert f"port {service.settings.vllm_port} on 127.0.0.1 is already in use" in service.status().message
        assert service.page_answers()


def _bind(sock: socket.socket, port: int) -> bool:
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        return False
    return True


def test_a_chat_page_over_its_own_limit_stops_everything(tmp_path, capsys) -> None:
    with FakeService(tmp_path, ["serve"], ui_max_restarts=0) as service:
        service.wait_for(service.both_up)
        service.kill("page")
        service.thread.join(timeout=40)
        assert service.code == 1
        service.assert_nothing_left()
    assert "the chat page crashed once in" in capsys.readouterr().err


def test_a_check_after_start_up_can_ask_for_other_settings_without_it_counting_as_a_crash(tmp_path, capsys) -> None:
    checked: list[list[str]] = []

    def after_healthy(server) -> str | None:
        checked.append(server.launch.argv)
        if len(checked) > 1:
            return None
        server.launch = LaunchSpec(argv=[*server.launch.argv], env={"FAKE_RELAUNCHED": "1"}, device="cpu")
        return "its answers were wrong; trying other settings"

    with FakeService(tmp_path, ["serve", "serve"], after_healthy=after_healthy) as service:
        service.wait_for(service.both_up)
        assert len(checked) == 2 and service.launcher.server.launch.env == {"FAKE_RELAUNCHED": "1"}
        assert service.launcher.vllm.policy.crash_times == []
        assert service.vllm_script.read_text() == ""  # started twice
    assert "starting vLLM again: its answers were wrong" in capsys.readouterr().err


def test_the_page_starts_at_once_and_a_stop_while_vllm_still_starts_leaves_nothing(tmp_path) -> None:
    with FakeService(tmp_path, ["hang"]) as service:  # a vLLM that never answers, as one compiling for long
        service.wait_for(lambda: service.launcher.page.state is State.RUNNING and service.page_answers())
        status = service.status()
        assert status.state == "starting" and status.phase == "launching"
        assert "The model server is starting: launching" in describe_down(service.settings)
        assert service.stop() == 128 + signal.SIGTERM
        service.assert_nothing_left()


def test_the_self_tests_restart_is_a_phase_of_the_start_not_a_crash(tmp_path) -> None:
    """What the page reads while a check after start-up starts vLLM again: "starting" all along, the
    phase saying why, never "restarting" or "failed"."""
    seen: list[tuple[str, str]] = []
    checks: list[int] = []

    def after_healthy(server) -> str | None:
        checks.append(1)
        time.sleep(0.5)  # long enough for the watcher to read "checking"
        return None if len(checks) > 1 else "self-test failed in bfloat16 (asked ...); starting it in float32"

    with FakeService(tmp_path, ["serve", "serve"], after_healthy=after_healthy) as service:

        def watch() -> bool:
            status = service.status()
            if not seen or seen[-1] != (status.state, status.phase):
                seen.append((status.state, status.phase))
            return service.both_up()

        service.wait_for(watch)
    states = {state for state, _ in seen}
    assert states <= {"starting", "ready"}, seen
    assert ("starting", "checking its answers (self-test)") in seen
    again = [phase for _, phase in seen if "started again after its self-test: starting it in float32" in phase]
    assert again, seen


# --- `python -m backend stop` and pid reuse ---
def test_stop_signals_only_the_process_it_started(tmp_path) -> None:
    settings = make_settings(tmp_path)
    pidfile = settings.log_dir / f"serve-{settings.vllm_port}.pid"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write_pidfile(pidfile, sleeper.pid)
        assert our_process(pidfile)[0].pid == sleeper.pid
        recorded = json.loads(pidfile.read_text())
        pidfile.write_text(json.dumps({**recorded, "create_time": recorded["create_time"] - 100}))  # as after reuse
        proc, why = our_process(pidfile)
        assert proc is None and "belongs to another process" in why
        assert cmd_stop(settings) == 0 and sleeper.poll() is None  # left alone
        write_pidfile(pidfile, sleeper.pid)
        assert cmd_stop(settings) == 0
        sleeper.wait(timeout=10)  # it was stopped (cmd_stop reaped it, so its code reads 0 here)
        assert not pidfile.exists()
    finally:
        sleeper.kill()


# --- the page's view: the same helper, asynchronously, with "the launcher gave up" as the way to be gone ---
async def test_the_page_stops_waiting_once_the_launcher_gave_up_and_says_why(tmp_path) -> None:
    settings = make_settings(tmp_path)  # nothing listens on its vLLM port
    write_status(settings.status_file, BackendStatus(state="failed", message="vLLM crashed 4 times", since=time.time()))
    started = time.monotonic()
    assert not await wait_until_healthy(settings, on_wait=_ignore, timeout=60, every=0.1)
    assert time.monotonic() - started < 30  # told by the status, not by the deadline
    assert "down and will not be restarted automatically: vLLM crashed 4 times" in describe_down(settings)


async def test_the_page_waits_while_restarting_and_goes_on_once_healthy(tmp_path, fake_server_url: str) -> None:
    settings = make_settings(tmp_path, base_url=fake_server_url)
    write_status(settings.status_file, BackendStatus(state="restarting", phase="restarting in 1 s", since=time.time()))
    assert await wait_until_healthy(settings, on_wait=_ignore, timeout=60, every=0.1)


async def _ignore(_text: str) -> None:
    pass
