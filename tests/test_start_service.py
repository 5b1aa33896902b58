"""start_service.sh end to end: chat page up, and no process or port left behind after any signal."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import httpx
import psutil
import pytest

from backend.bench.chainlit_client import ChainlitSession
from backend.engine.cpu_compile import inductor_dir
from backend.errors import NOTICE_MARK
from backend.qa.export import load_records
from backend.qa.history_db import prepare
from backend.server import compile_cache, processes
from backend.server_status import key_file, read_status
from backend.settings import PROJECT_ROOT
from tests.conftest import EAGER, free_ports
from tests.harness_cli import status_file_of

READY = "chat ready at"
SLOW_START = 1500  # seconds one vLLM start may take on the shared 2-core machine with several other servers


class RunningService:
    """start_service.sh started with its own ports and data folder; remembers every process it spawned.
    vLLM starts eager unless `compiled` (the default on a CPU): only the SIGKILL test's restart is about compiling."""

    def __init__(
        self, tmp_path, ports: tuple[int, int] | None = None, *, compiled: bool = False, **extra_env: str
    ) -> None:
        self.vllm_port, self.ui_port = ports or tuple(free_ports(2))
        env = {
            **os.environ,
            **({} if compiled else EAGER),
            "RCHAT_VLLM_PORT": str(self.vllm_port),
            "RCHAT_UI_PORT": str(self.ui_port),
            "RCHAT_LOG_DIR": str(tmp_path),
            "RCHAT_DATA_DIR": str(tmp_path / "data"),
            **extra_env,
        }
        self.proc = subprocess.Popen(
            [str(PROJECT_ROOT / "start_service.sh")],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.status_file = status_file_of(env)  # the launcher's; its key file for the user's commands beside it
        self.lines: list[str] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            if READY in line:
                self.ready.set()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def exit_code(self, timeout: float) -> int:
        """The script's exit status once it has ended, with everything it printed read: its last lines
        can still be in the pipe when it has exited."""
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return code

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


@pytest.mark.server
@pytest.mark.parametrize(
    "sig, moment",
    [(signal.SIGTERM, "starting"), (signal.SIGHUP, "starting"), (signal.SIGKILL, "ready")],
    ids=lambda v: v.name if isinstance(v, signal.Signals) else v,
)
def test_signal_to_start_script_leaves_nothing_running(tmp_path, sig: signal.Signals, moment: str) -> None:
    """SIGKILL once the chat is up; SIGTERM and SIGHUP (a closed terminal) while vLLM is still loading,
    when its engine process exists and the page, started at once, too. Ctrl-C once the chat is up ends
    the second start after SIGKILL, and Ctrl-C in the middle of a vLLM restart ends the every-crash test."""
    with RunningService(tmp_path, compiled=sig == signal.SIGKILL) as service:
        if moment == "ready":
            service.wait_ready()
            assert httpx.get(f"http://127.0.0.1:{service.ui_port}/").status_code == 200
        else:
            _wait_for_output(service, "vLLM: starting the engine", timeout=SLOW_START)
        spawned = service.descendants()
        names = " ".join(" ".join(p.cmdline()) for p in spawned)
        assert "vllm" in names and "backend.page.serve" in names
        installed = [
            line
            for line in service.output.splitlines()
            if "[setup] installing" in line or line.startswith("embedded model ")
        ]
        assert not installed, installed  # a second run installs, converts and copies nothing
        assert "CPU threads: vLLM's own" in service.output  # the start-up says how vLLM computes (default)
        key = key_file(service.status_file)  # for the user's own commands
        assert key.exists()
        os.kill(service.proc.pid, sig)
        # After SIGKILL the launcher cannot clean up: the watchdog and parent-death signal must.
        left = _all_gone(spawned, timeout=60)
        assert not left, f"still running after {sig.name}: {[p.cmdline()[:3] for p in left]}"
        assert processes.port_is_free("127.0.0.1", service.vllm_port)
        assert processes.port_is_free("127.0.0.1", service.ui_port)
        if sig != signal.SIGKILL:
            assert service.exit_code(timeout=30) == 128 + sig
            assert "all stopped" in service.output
            assert not key.exists()  # the stopped launcher took its key with it
    if sig == signal.SIGKILL:  # the hardest case for the clean-up
        _starts_again_on_the_same_ports_for_a_qa_session(tmp_path / "again", service)


def _starts_again_on_the_same_ports_for_a_qa_session(folder, service: RunningService) -> None:
    """A second start right after the first one ended, on its ports, for a whole QA session (login, wrong
    login, answer, both exports, Ctrl-C once the chat is up); then every file it left is searched for the
    API key, the auth secret and the password. The restart compiles nothing: vLLM loads the compiled model
    from the user's cache, and says so. (One start for both: each real start costs about a minute here.)"""
    kernels = compile_cache_files()
    data_dir, api_key, password = folder / "data", "sk-rchat-test-KEY-5f2a9c", "Correct-Horse-7731"
    added = _backend_cli(data_dir, "user", "add", "qa1", "--password-stdin", stdin=password + "\n")
    assert added.returncode == 0, added.stderr
    with RunningService(
        folder,
        ports=(service.vllm_port, service.ui_port),
        compiled=True,
        RCHAT_STARTUP_TIMEOUT=str(SLOW_START),
        RCHAT_API_KEY=api_key,
        RCHAT_DEFAULT_MAX_TOKENS="32",
        VLLM_LOGGING_LEVEL="DEBUG",
    ) as again:
        again.wait_ready(SLOW_START)
        said, answers = asyncio.run(_log_in_and_ask(f"http://127.0.0.1:{again.ui_port}", "qa1", password))
        assert len(answers) == 1 and answers[0].strip(), said
        if "CPU compile: torch.compile" in again.output:  # this machine compiles (g++, Python.h)
            assert f"vLLM: {compile_cache.CACHED}" in again.output and compile_cache.FIRST_COMPILE not in again.output
            assert compile_cache_files() == kernels, "the restart compiled kernels again"
        for fmt in ("jsonl", "md"):
            done = _backend_cli(data_dir, "export", "--format", fmt, "--out", str(folder / f"export.{fmt}"))
            assert done.returncode == 0, done.stderr
        spawned = again.descendants()  # Ctrl-C once the chat is up: everything stops, both ports free
        os.kill(again.proc.pid, signal.SIGINT)
        assert again.exit_code(timeout=60) == 128 + signal.SIGINT
        assert not _all_gone(spawned, timeout=60), "a process outlived Ctrl-C"
        assert processes.port_is_free("127.0.0.1", again.vllm_port)
        assert processes.port_is_free("127.0.0.1", again.ui_port)
        console = again.output
        assert "all stopped" in console
    _no_secret_in_any_file(folder, console, api_key=api_key, password=password)


def _no_secret_in_any_file(folder, console: str, *, api_key: str, password: str) -> None:
    data_dir = folder / "data"
    auth_secret = (data_dir / "auth-secret").read_text().strip()
    assert len(auth_secret) >= 32 and "qa1" in (folder / "export.jsonl").read_text()
    secret_files = {data_dir / "auth-secret"}  # where the secret is meant to be, mode 600
    searched = [p for p in folder.rglob("*") if p.is_file() and p not in secret_files]
    assert any(p.suffix == ".log" for p in searched) and any("history" in p.name for p in searched)
    for name, secret in {"API key": api_key, "auth secret": auth_secret, "password": password}.items():
        assert secret not in console, f"the {name} is in start_service.sh's output"
        leaks = [str(p) for p in searched if secret.encode() in p.read_bytes()]
        assert not leaks, f"the {name} is written in {leaks}"


def compile_cache_files() -> set[str]:
    """The compiled graphs in the user's compile cache (cpu_compile.inductor_dir), which only a compile adds to."""
    folder = inductor_dir() / "fxgraph"
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()


class PageWatcher:
    """Asks the page for / every 0.3 s from another thread, noting each miss and each published state."""

    def __init__(self, service: RunningService) -> None:
        self.url, self.status_file = f"http://127.0.0.1:{service.ui_port}/", service.status_file
        self.misses: list[str] = []
        self.states: set[str] = set()
        self.watching = True
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while self.watching:
            try:
                code = httpx.get(self.url, timeout=5).status_code
                if code != 200:
                    self.misses.append(f"HTTP {code}")
            except httpx.HTTPError as err:
                self.misses.append(repr(err))
            status = read_status(self.status_file)
            self.states.add(status.state if status else "none")
            time.sleep(0.3)

    def stop(self) -> None:
        self.watching = False
        self.thread.join(timeout=10)


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:  # gone, or a zombie not yet reaped
        return ""


def _pid_of(service: RunningService, marker: str) -> int:
    return next(p.pid for p in service.descendants() if marker in _cmdline(p))


def _wait_for_new(service: RunningService, marker: str, old_pid: int, timeout: float = 120) -> int:
    """The pid of the replacement once it is spawned (not ready: just there)."""
    deadline = time.monotonic() + timeout
    while True:
        pids = [p.pid for p in service.descendants() if marker in _cmdline(p) and p.pid != old_pid]
        if pids:
            return pids[0]
        assert time.monotonic() < deadline and service.proc.poll() is None, service.output
        time.sleep(0.2)


async def _chat_then_resume(url: str, thread_id: str = "") -> str:
    """Ask in a new chat, or go on with an earlier one (a tab that reconnects to it); the thread's id."""
    async with ChainlitSession(url, thread_id=thread_id) as session:
        answer = await session.ask("And another one?" if thread_id else "Name a colour.")
        assert [t for t in answer.texts.values() if not t.startswith(NOTICE_MARK) and t.strip()], session.messages
        return session.thread_id


@pytest.mark.server
@pytest.mark.timeout(3 * SLOW_START)  # two whole vLLM starts, a page restart, two starts cut short
def test_every_crash_a_service_meets_in_a_row_and_ctrl_c_mid_restart_leave_its_users_answered_and_nothing_behind(
    tmp_path,
) -> None:
    """One real service through the faults that come to it, one after another: the chat page killed -9;
    vLLM killed in the middle of an answer, then its replacement before it is healthy (an out-of-memory
    killer during a restart); a question asked meanwhile; then Ctrl-C while the next restart waits on
    /health. One run for all of them: each real vLLM start costs about a minute on a slow CI host.
    Crashes over the limit (giving up) are test_supervision's, with children that crash on demand."""
    with RunningService(
        tmp_path, RCHAT_MAX_RESTARTS="3", RCHAT_DEFAULT_MAX_TOKENS="400", RCHAT_STARTUP_TIMEOUT=str(SLOW_START)
    ) as service:
        service.wait_ready(SLOW_START)
        url, db = f"http://127.0.0.1:{service.ui_port}", tmp_path / "data" / "history.sqlite3"
        thread_id = asyncio.run(_chat_then_resume(url))
        vllm_pid = _pid_of(service, "vllm.entrypoints")

        # The chat page killed -9: it is back, vLLM untouched, and the earlier chat goes on from the history.
        os.kill(_pid_of(service, "backend.page.serve"), signal.SIGKILL)
        _wait_for_output(service, "the chat page is healthy again")
        assert _pid_of(service, "vllm.entrypoints") == vllm_pid
        assert asyncio.run(_chat_then_resume(url, thread_id)) == thread_id
        assert [r["question"] for r in load_records(db, thread_id=thread_id)] == ["Name a colour.", "And another one?"]

        # vLLM killed in the middle of an answer: it ends with a message and keeps its text, on the page and
        # stored; the page answers HTTP from here to the end of the restarts.
        watcher = PageWatcher(service)
        [shown], broken_thread = asyncio.run(_kill_mid_answer(url, service))
        assert "broke in the middle of the answer" in shown
        [stored] = load_records(db, thread_id=broken_thread)
        assert stored["outcome"] == "interrupted" and len(stored["answer"]) > 5 and stored["answer"] in shown
        # ... then its replacement, before it is healthy: one more crash, a longer backoff.
        os.killpg(_wait_for_new(service, "vllm.entrypoints", vllm_pid), signal.SIGKILL)
        _wait_for_output(service, "while restarting; restarting in 2 s")
        assert "vLLM exited with code -9; restarting in 1 s" in service.output
        # A question asked while vLLM restarts: the page says so, waits, and answers once it is back.
        said, answers = asyncio.run(_ask(url, "What is 2 plus 2?", timeout=SLOW_START))
        assert "restarting" in said and "ready again; answering now" in said
        assert len(answers) == 1 and answers[0].strip(), said
        # The page answers once /health does; the launcher says "healthy again" after its self-test.
        _wait_for_output(service, "vLLM is healthy again", timeout=SLOW_START)
        watcher.stop()
        assert watcher.misses == [] and watcher.states == {"ready", "restarting"}
        assert httpx.get(f"http://127.0.0.1:{service.vllm_port}/health").status_code == 200

        # Ctrl-C while a restart waits on /health: everything stops, nothing is left, both ports free.
        before = _pid_of(service, "vllm.entrypoints")
        _kill_vllm(service)
        _wait_for_new(service, "vllm.entrypoints", before)
        spawned = service.descendants()
        os.kill(service.proc.pid, signal.SIGINT)
        assert service.exit_code(timeout=60) == 128 + signal.SIGINT
        assert not _all_gone(spawned, timeout=30)
        assert processes.port_is_free("127.0.0.1", service.vllm_port)
        assert processes.port_is_free("127.0.0.1", service.ui_port)
        assert "all stopped" in service.output and "Traceback" not in service.output


def _kill_vllm(service: RunningService) -> None:
    engine = next(p for p in service.descendants() if "vllm.entrypoints" in _cmdline(p))
    os.killpg(engine.pid, signal.SIGKILL)  # the whole vLLM group, as an out-of-memory kill would


def _wait_for_output(service: RunningService, text: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while text not in service.output:
        assert time.monotonic() < deadline, service.output
        assert service.proc.poll() is None, service.output
        time.sleep(0.5)


async def _kill_mid_answer(url: str, service: RunningService) -> tuple[list[str], str]:
    """Ask for a long answer and kill vLLM once a few tokens are on the page; the page's final answer texts."""
    async with ChainlitSession(url) as session:
        asked = asyncio.create_task(session.ask("Write a long story about a robot who learns to paint.", timeout=300))
        while not (session.current and len(session.current.token_times) >= 5):
            assert not asked.done(), "the answer ended before vLLM could be killed"
            await asyncio.sleep(0.05)
        _kill_vllm(service)
        answer = await asked
        return [t for t in answer.texts.values() if not t.startswith(NOTICE_MARK)], session.thread_id


async def _ask(
    url: str, question: str, *, timeout: float = 300, user: str = "", password: str = ""
) -> tuple[str, list[str]]:
    """Everything the page said while answering (notices included, every update), and the answers."""
    async with ChainlitSession(url, user=user, password=password) as session:
        answer = await session.ask(question, timeout=timeout)
        said = "\n".join(m.get("output", "") for m in session.messages)
    return said, [t for t in answer.texts.values() if not t.startswith(NOTICE_MARK)]


def _backend_cli(data_dir, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "backend", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={**os.environ, "RCHAT_DATA_DIR": str(data_dir)},
    )


async def _log_in_and_ask(url: str, user: str, password: str) -> tuple[str, list[str]]:
    """A wrong password is refused; the right one gets in and asks: what the page said, and the answers."""
    with pytest.raises(httpx.HTTPStatusError):
        await ChainlitSession(url, user=user, password=password + "-wrong").login()
    return await _ask(url, "What is the capital of France?", user=user, password=password)


def _snapshot(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "key, value, says",
    [
        ("RCHAT_VLLM_PORT", "abc", "RCHAT_VLLM_PORT='abc'"),
        ("RCHAT_DEFAULT_TEMPERATURE", "9", "less than or equal to 2"),
        ("RCHAT_MAX_RESTARTS", "-1", "greater than or equal to 0"),
        ("RCHAT_USERS", "{not json", "it must be JSON"),
        ("RCHAT_HISTORY", "maybe", "RCHAT_HISTORY='maybe'"),
        ("RCHAT_MODEL", "/nonexistent/model", "model path /nonexistent/model does not exist"),
        ("RCHAT_MODEL", str(PROJECT_ROOT / "backend"), "has no config.json"),
    ],
    ids=lambda v: str(v)[:24],
)
def test_a_bad_setting_stops_the_start_in_one_line_and_changes_nothing_stored(tmp_path, key, value, says) -> None:
    """An existing data folder (history with a chat in it, a user) is byte for byte the same after."""
    data_dir = tmp_path / "data"
    assert (
        _backend_cli(data_dir, "user", "add", "qa1", "--password-stdin", stdin="Correct-Horse-7731\n").returncode == 0
    )
    prepare(data_dir / "history.sqlite3")  # the app's own schema, in WAL mode
    con = sqlite3.connect(data_dir / "history.sqlite3")
    with con:
        con.execute("CREATE TABLE kept (note TEXT)")
        con.execute("INSERT INTO kept VALUES ('a chat someone cares about')")
    con.close()
    before = _snapshot(data_dir)
    ports = tuple(free_ports(2))
    env = {
        **os.environ,
        "RCHAT_VLLM_PORT": str(ports[0]),
        "RCHAT_UI_PORT": str(ports[1]),
        "RCHAT_LOG_DIR": str(tmp_path / "logs"),
        "RCHAT_DATA_DIR": str(data_dir),
        key: value,
    }
    done = subprocess.run(
        [str(PROJECT_ROOT / "start_service.sh")], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode in (1, 2), done.stdout + done.stderr
    errors = [line for line in (done.stdout + done.stderr).splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and says in errors[0], done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert _snapshot(data_dir) == before
    assert all(processes.port_is_free("127.0.0.1", p) for p in ports)
