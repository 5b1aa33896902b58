"""The long-lived launcher that `start_service.sh` execs: owns vLLM and Chainlit, in that order.

It starts vLLM (or waits on an external server), waits for /health while showing progress, starts
Chainlit, then watches both: Chainlit exits -> stop vLLM and exit with Chainlit's code; vLLM dies ->
restart it with backoff while the UI says so; SIGINT/SIGTERM/SIGHUP -> stop both, UI first. A
watchdog process covers our own death: nothing we started outlives us.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import httpx

from backend.server import processes, self_test
from backend.errors import ChatAppError, PortBusy
from backend.qa.setup import preflight
from backend.settings import PROJECT_ROOT, Settings
from backend.server.status_file import BackendStatus, write_status
from backend.server.supervisor import Progress, VLLMServer

UI_READY_TIMEOUT = 120.0


class Shutdown(Exception):
    """Raised from a signal handler to unwind into the cleanup path."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _raise_shutdown(signum: int, _frame: object) -> None:
    raise Shutdown(signum)


def say(text: str) -> None:
    print(f"[start] {text}", file=sys.stderr, flush=True)


class ProgressPrinter:
    """Prints a line when the phase changes, and every 10 s, so a slow start never looks hung."""

    def __init__(self, publish: Callable[[str], None]) -> None:
        self.last_phase, self.last_time, self.publish = "", 0.0, publish

    def __call__(self, progress: Progress) -> None:
        if progress.phase != self.last_phase or progress.elapsed - self.last_time >= 10:
            say(f"{progress.elapsed:5.0f} s  vLLM: {progress.phase}")
            self.last_phase, self.last_time = progress.phase, progress.elapsed
            self.publish(progress.phase)


class Launcher:
    def __init__(self, settings: Settings, *, with_ui: bool = True) -> None:
        self.settings, self.with_ui = settings, with_ui
        self.started = time.monotonic()
        self.server = VLLMServer(settings, on_progress=ProgressPrinter(self._publish_starting))
        self.ui: subprocess.Popen | None = None
        self.watchdog = self._start_watchdog()
        self.crashes: list[float] = []
        self.gave_up = False  # too many crashes: no more restarts; the page says why
        self.warning = ""  # from the start-up self-test: shown on the page while the server runs
        self.state: BackendStatus = BackendStatus(state="starting", since=time.time(), pid=os.getpid())

    # --- status published for the UI ---
    def _publish(self, state: str, phase: str = "", message: str = "") -> None:
        since = self.state.since if state == self.state.state else time.time()
        self.state = BackendStatus(state=state, phase=phase, message=message, since=since, pid=os.getpid(),
                                   warning=self.warning)
        write_status(self.settings.status_file, self.state)

    def _publish_starting(self, phase: str) -> None:
        self._publish("restarting" if self.crashes else "starting", phase)

    # --- the watchdog ---
    def _start_watchdog(self) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "backend.server.watchdog"], stdin=subprocess.PIPE,
                                cwd=PROJECT_ROOT, start_new_session=True, text=True)

    def _tell_watchdog(self, line: str) -> None:
        try:
            self.watchdog.stdin.write(line + "\n")
            self.watchdog.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    # --- the steps ---
    def run(self) -> int:
        try:
            if not self.settings.external:
                self.server.check_can_start()  # model and port first: a doomed start touches no data
            if self.with_ui and not self._preflight():
                return 2
            self._check_ui_port()
            self._start_server()
            if self.with_ui:
                self._start_ui()
            return self._watch()
        except Shutdown as sig:
            say(f"got {sig}, stopping")
            return 128 + sig.signum
        except ChatAppError as err:
            self._publish("failed", message=str(err).splitlines()[0])
            say(f"error: {err}")
            return 1
        finally:
            self._stop_all()

    def _preflight(self) -> bool:
        """Users file and history database, before minutes of starting vLLM. False: do not start."""
        problems = preflight(self.settings)
        for problem in problems:
            say(problem)
        return not any(p.startswith("error") for p in problems)

    def _check_ui_port(self) -> None:
        host, port = self.settings.ui_host, self.settings.ui_port
        if self.with_ui and not processes.port_is_free(host, port):
            raise PortBusy(f"Cannot start the chat page: port {port} is already in use by "
                           f"{processes.port_holder(port)}. Stop it or set RCHAT_UI_PORT to a free port.")

    def _start_server(self) -> None:
        s = self.settings
        if s.external:
            say(f"external mode: waiting on {s.base_url}/health (nothing is launched)")
        else:
            say(f"starting vLLM on {s.server_url} ({self.server.launch.device}), model {s.resolved_model}")
            say(f"vLLM log: {self.server.log_path}")
            say(f"dtype {self.server.launch.dtype or 'auto'}: {self.server.launch.why}")
        self.server.start()
        if self.server.proc is not None:
            self._tell_watchdog(f"+{self.server.proc.pid}")
        took = self.server.wait_healthy()
        say(f"vLLM healthy after {took:.1f} s")
        self.warning = self_test.confirm(self.server, say=say, on_relaunch=self._follow_relaunch)
        self._publish("external" if s.external else "ready", "ready")

    def _follow_relaunch(self, old_pid: int | None, new_pid: int | None) -> None:
        """The self-test relaunched vLLM (in float32): the watchdog must guard the new group."""
        if old_pid:
            self._tell_watchdog(f"-{old_pid}")
        if new_pid:
            self._tell_watchdog(f"+{new_pid}")

    def _ui_env(self) -> dict[str, str]:
        return {**os.environ, "RCHAT_API_KEY": self.server.api_key, "PYTHONUNBUFFERED": "1"}

    def _start_ui(self) -> None:
        s = self.settings
        argv = [sys.executable, "-m", "chainlit", "run", str(PROJECT_ROOT / "app.py"),
                "--host", s.ui_host, "--port", str(s.ui_port), "--headless"]
        log_path = s.log_dir / f"ui-{s.ui_port}.log"
        log_path.write_text("")
        self.ui = processes.spawn_group(argv, env=self._ui_env(), log_path=log_path, cwd=PROJECT_ROOT)
        self._tell_watchdog(f"+{self.ui.pid}")
        self._wait_ui(log_path)
        shown = "localhost" if s.ui_host in ("127.0.0.1", "0.0.0.0") else s.ui_host
        say(f"chat ready at http://{shown}:{s.ui_port} after {time.monotonic() - self.started:.1f} s "
            "(Ctrl-C stops everything)")

    def _wait_ui(self, log_path) -> None:
        url = f"http://{self.settings.ui_host}:{self.settings.ui_port}/"
        deadline = time.monotonic() + UI_READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.ui.poll() is not None:
                from backend.server.supervisor import read_tail
                raise ChatAppError(f"The chat UI exited with code {self.ui.returncode} while starting. "
                                   f"Its log ({log_path}) ends with:\n{read_tail(log_path, 30)}")
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise ChatAppError(f"The chat UI did not answer on {url} within {UI_READY_TIMEOUT:.0f} s; see {log_path}.")

    def _watch(self) -> int:
        """Block until the UI exits (its code is ours) or vLLM can no longer be kept up."""
        while True:
            if self.ui is not None and self.ui.poll() is not None:
                code = self.ui.returncode
                say(f"the chat UI exited with code {code}; stopping vLLM")
                return code
            if not self.settings.external and not self.gave_up and not self.server.is_running():
                self._restart_server()
                if self.gave_up and self.ui is None:
                    return 1  # no page to explain it on
            time.sleep(0.5)

    def _restart_server(self) -> None:
        """vLLM died under a running UI: restart with backoff, or give up after too many crashes.

        Giving up keeps the page running: a booth screen then says what happened and what to do,
        instead of going blank; the console gets the message and the end of vLLM's log."""
        code = self.server.proc.returncode if self.server.proc else None
        tail = self.server.log_tail(15)
        old_pid = self.server.proc.pid if self.server.proc else None
        self.server.stop(grace=2)  # reap what is left of the dead group
        if old_pid:
            self._tell_watchdog(f"-{old_pid}")
        now = time.monotonic()
        self.crashes = [t for t in self.crashes if now - t < self.settings.restart_window] + [now]
        if len(self.crashes) > self.settings.max_restarts:
            message = (f"vLLM crashed {len(self.crashes)} times in {self.settings.restart_window:.0f} s "
                       f"(last exit code {code}); giving up. Check {self.server.log_path}, then restart "
                       "with ./start_service.sh.")
            self._publish("failed", message=message)
            say(f"error: {message}\nThe end of its log:\n{tail}")
            if self.ui is not None:
                say("the chat page stays up and tells its users; Ctrl-C stops it")
            self.gave_up = True
            return
        delay = min(30.0, 2.0 ** (len(self.crashes) - 1))
        say(f"vLLM exited with code {code}; restarting in {delay:.0f} s "
            f"(crash {len(self.crashes)} of at most {self.settings.max_restarts})")
        self._publish("restarting", f"restarting in {delay:.0f} s")
        time.sleep(delay)
        self.server.start()
        self._tell_watchdog(f"+{self.server.proc.pid}")
        self.server.wait_healthy()
        self._publish("ready", "ready")
        say("vLLM is healthy again")

    def _stop_all(self) -> None:
        # Once we are cleaning up, further signals must not interrupt the cleanup itself.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        if self.ui is not None:
            processes.stop_group(self.ui, grace=10)
            self.ui = None
        if self.server.proc is not None:
            say("stopping vLLM")
            self.server.stop()
        if self.state.state != "failed":
            self._publish("stopped")
        self._tell_watchdog("exit")
        self.watchdog.wait(timeout=5)
        say("all stopped")


def run(settings: Settings, *, with_ui: bool = True) -> int:
    """Entry point: install signal handlers (only here) and run the launcher."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_shutdown)
    return Launcher(settings, with_ui=with_ui).run()
