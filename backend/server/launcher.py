"""The long-lived launcher that `start_service.sh` execs: owns vLLM and the chat page, in that order.

It starts vLLM (or waits on an external server) and the chat page at once: the page serves within
seconds, says which phase vLLM's start is in (from the status file this launcher writes) and answers
the questions asked meanwhile once vLLM is ready and has passed its self-test. From then on it ticks
every supervised child in one loop (backend/server/supervision.py), so it watches all of them at every
moment, a restart's wait included:
- vLLM dies, or a restart of it fails: restart with backoff under its policy while the page says
  "restarting"; over the limit, stop restarting and keep the page up saying why.
- the chat page dies: restart it under its own policy while vLLM stays up; over its limit, stop all.
  With RCHAT_PAGE_WORKERS > 1 that holds for each page process and for HAProxy in front of them
  (backend/server/page_pool.py).
- SIGINT/SIGTERM/SIGHUP, at any moment: stop both (page first) within their grace periods; one that came
  before anything was launched (backend/stop_request.py holds them from the process's first moment)
  launches nothing. SIGHUP is ignored under `nohup`.
A watchdog process covers our own death: nothing we started outlives us.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import threading
import time
from collections.abc import Callable

import httpx

from backend.engine.launch_facts import launch_facts
from backend.engine.vllm_command import LaunchSpec
from backend.errors import ChatAppError
from backend.model_info import model_files_hash
from backend.server import console, self_test
from backend.server.console import ProgressPrinter, say
from backend.server.page_pool import PagePool, plan
from backend.server.restart_policy import RestartPolicy
from backend.server.supervision import Hooks, State, Supervised
from backend.server.supervisor import STOP_GRACE, VLLMServer
from backend.server.watchdog_link import WatchdogLink
from backend.server_status import BackendStatus, key_file, remove_key, write_key, write_status
from backend.server_status import State as PublishedState
from backend.settings import Settings
from backend.stop_request import StopRequest

TICK = 0.5  # seconds between looks at the children; also the longest a stop request waits

AfterHealthy = Callable[[VLLMServer], str | None]
Preflight = Callable[[Settings], list[str]]
"""What to check before starting (the CLI passes the history's check): lines to print, "error..." stops."""
"""Run each time vLLM answers /health (see supervision.py): None keeps it; a reason starts it again."""


class Launcher:
    def __init__(
        self,
        settings: Settings,
        *,
        with_ui: bool = True,
        launch: LaunchSpec | None = None,
        page_argv: list[str] | None = None,
        after_healthy: AfterHealthy | None = None,
        stop: StopRequest | None = None,
    ) -> None:
        self.settings, self.with_ui = settings, with_ui
        self.stop = stop or StopRequest()  # the CLI's, holding the signals since the process began
        self.preflight: Preflight = lambda _settings: []  # run() sets the CLI's (the history's check)
        self.started = time.monotonic()
        self.state = BackendStatus(state="starting", since=time.time(), pid=os.getpid())
        self.watchdog = WatchdogLink.start()
        self.warning = ""  # from the start-up self-test: shown on the page while the server runs
        self.engine: dict = {}  # what was launched, for the answers' stamps; empty in external mode
        self.model_hash: concurrent.futures.Future | None = None  # hashed while vLLM starts
        self.phase_since = time.time()
        self.announced: set[str] = set()  # the one-time console lines already said ("page", "ready")
        hooks = self._hooks()
        self.server = VLLMServer(settings, launch=launch, on_progress=ProgressPrinter(self._publish_starting))
        self.vllm = Supervised(
            self.server,
            RestartPolicy(settings.max_restarts, settings.restart_window),
            hooks,
            after_ready=lambda: (after_healthy or self._self_test)(self.server),
        )
        # One page process, or RCHAT_PAGE_WORKERS of them behind HAProxy (backend/server/page_pool.py).
        self.pages = PagePool(
            settings,
            plan(settings, self.server.launch.device),
            argv=page_argv,
            hooks=hooks,
            env={**os.environ, "RCHAT_API_KEY": self.server.api_key, "PYTHONUNBUFFERED": "1"},
        )
        self.page = self.pages.pages[0]  # the one page of a plain start

    def _hooks(self) -> Hooks:
        return Hooks(
            say=say,
            spawned=lambda pid: self.watchdog.tell(f"+{pid}"),
            reaped=lambda pid: self.watchdog.tell(f"-{pid}"),
            changed=self._changed,
        )

    def request_stop(self, signum: int) -> None:
        """A stop, as a signal asks for it: the loop sees it within one tick, whatever it was doing."""
        self.stop.ask(signum)

    # --- status published for the UI ---
    def _publish(self, state: PublishedState, phase: str = "", message: str = "") -> None:
        now = time.time()
        since = self.state.since if state == self.state.state else now
        if phase != self.state.phase or state != self.state.state:
            self.phase_since = now
        self.state = BackendStatus(
            state=state,
            phase=phase,
            message=message,
            since=since,
            pid=os.getpid(),
            engine=self.engine,
            warning=self.warning,
            phase_since=self.phase_since,
        )
        write_status(self.settings.status_file, self.state)

    def _self_test(self, server: VLLMServer) -> str | None:
        """The default after-healthy check: a known answer (backend/server/self_test.py); a reason restarts."""
        reason, self.warning = self_test.after_healthy(server, say=say)
        return reason

    def _publish_starting(self, phase: str) -> None:
        if self.vllm.relaunches:  # the self-test's restart: one more phase of the start, not a crash
            phase = f"{phase} (started again after its self-test: {self.vllm.relaunch_reason.rsplit('; ', 1)[-1]})"
        self._publish("restarting" if self.vllm.restarting else "starting", phase)

    def _changed(self, sup: Supervised) -> None:
        if sup in self.pages.children:
            if sup is self.pages.front() and sup.state is State.RUNNING:
                self._announce()
            return
        if sup.state is State.RUNNING:
            self._refresh_engine()
            self._publish("external" if self.settings.external else "ready", "ready")
            if sup.relaunches == 0 and self.server.ready_after is None:
                self.server.ready_after = time.monotonic() - (self.server.started_at or self.started)
                say(console.healthy(self.server.ready_after))
            self.server.note_ready()
            self._announce()
        elif sup.state is State.BACKOFF:
            self._publish("restarting", f"restarting in {max(0.0, sup.restart_at - time.monotonic()):.0f} s")
        elif sup.state is State.CHECKING:
            self._publish_starting("checking its answers (self-test)")
        elif sup.state is State.STARTING:
            self._publish_starting("launching")
        elif sup.state is State.GAVE_UP:
            self._publish("failed", message=sup.reason)
            if self.with_ui:
                say(console.PAGE_STAYS_UP)

    def _announce(self) -> None:
        """Say where the page is once it serves, and once more when the model is ready too."""
        if not self.with_ui or self.pages.front().state is not State.RUNNING:
            return
        shown = "localhost" if self.settings.ui_host in ("127.0.0.1", "0.0.0.0") else self.settings.ui_host
        url, took = f"http://{shown}:{self.settings.ui_port}", time.monotonic() - self.started
        if "page" not in self.announced and not self.vllm.ever_ready:
            say(console.page_up(url, took))
        self.announced.add("page")
        if "ready" not in self.announced and self.vllm.ever_ready:
            self.announced.add("ready")
            say(console.chat_ready(url, took))

    # --- the engine facts for the answers' stamps ---
    def _refresh_engine(self) -> None:
        """What runs now (the self-test may have started it again in another dtype), with the model hash
        once the thread computing it (started with vLLM, which reads the same files) is done."""
        if self.settings.external:
            return
        facts = launch_facts(self.server.launch, model_path=self.settings.resolved_model, with_hash=False)
        facts["model_hash"] = self.engine.get("model_hash")
        if self.model_hash is not None and self.model_hash.done():
            facts["model_hash"], self.model_hash = self.model_hash.result(), None
        self.engine = facts

    def _start_hashing(self) -> None:
        """A daemon thread: a Ctrl-C while it hashes a large model must not wait for it."""
        if self.settings.external:
            return
        future: concurrent.futures.Future = concurrent.futures.Future()

        def work() -> None:
            try:
                future.set_result(model_files_hash(self.settings.resolved_model))
            except Exception as err:  # noqa: BLE001 - the stamp says "unknown" rather than stop the start
                future.set_result(None)
                say(console.not_hashed(err))

        self.model_hash = future
        threading.Thread(target=work, name="model-hash", daemon=True).start()

    # --- the steps ---
    def run(self) -> int:
        try:
            if not self.settings.external:
                self.server.check_can_start()  # model and port first: a doomed start touches no data
            if self.with_ui and not self._preflight():
                return 2
            if self.with_ui:
                self.pages.check_ports()
            if (signum := self.stop.signum) is not None:  # during the imports or the checks: start nothing
                return self._stopped(signum)
            self._say_starting()
            # The key the page gets, for this user's own commands (replay, qa run): mode 0600, never logged.
            write_key(key_file(self.settings.status_file), self.server.api_key, os.getpid())
            self.vllm.begin()
            self._start_hashing()  # cached on disk: only a new model costs time, now beside vLLM's start
            if self.with_ui:
                self.pages.begin()  # at once: the page says how vLLM's start goes meanwhile
            return self._loop()
        except ChatAppError as err:
            self._publish("failed", message=str(err).splitlines()[0])
            say(console.error(err))
            return 1
        finally:
            self._stop_all()

    def _preflight(self) -> bool:
        """Users file and history database, before minutes of starting vLLM. False: do not start."""
        problems = self.preflight(self.settings)
        for problem in problems:
            say(problem)
        return not any(p.startswith("error") for p in problems)

    def _say_starting(self) -> None:
        s = self.settings
        if s.external:
            say(console.external(s.base_url))
        else:
            for line in console.starting(s.server_url, s.resolved_model, self.server.log_path, self.server.launch):
                say(line)
            self._refresh_engine()  # the model hash follows from a thread (_start_hashing)
        if self.with_ui:
            say(self.pages.describe())

    def _loop(self) -> int:
        """Tick both children until a stop is asked for or one of them can no longer be kept up."""
        with httpx.Client() as http:
            while (signum := self.stop.signum) is None:
                self.vllm.tick(http)
                if self.vllm.state is State.FAILED and self.vllm.error is not None:
                    raise self.vllm.error
                if self.model_hash is not None and self.model_hash.done():
                    self._refresh_engine()
                    self._publish(self.state.state, self.state.phase, self.state.message)
                self.pages.tick(http)
                if (failed := self.pages.error()) is not None:
                    raise failed
                if (gone := self.pages.gave_up()) is not None:
                    say(console.cannot_keep_up(gone.name))
                    return 1
                if self.vllm.state is State.GAVE_UP and not self.with_ui:
                    return 1  # no page to explain it on
                time.sleep(TICK)
        return self._stopped(signum)

    def _stopped(self, signum: int) -> int:
        say(console.got_signal(signum))
        return 128 + signum

    def _stop_all(self) -> None:
        self.pages.stop(grace=10)
        if self.server.proc is not None:
            say(console.STOPPING_VLLM)
        self.vllm.stop(grace=STOP_GRACE)
        if self.state.state != "failed":
            self._publish("stopped")
        remove_key(key_file(self.settings.status_file), os.getpid())
        self.watchdog.tell("exit")
        try:
            self.watchdog.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.watchdog.kill()
        say(console.ALL_STOPPED)


def run(
    settings: Settings,
    *,
    with_ui: bool = True,
    after_healthy: AfterHealthy | None = None,
    preflight: Preflight = lambda _settings: [],
    stop: StopRequest,
) -> int:
    """Entry point: run the launcher; `stop` holds the stop signals (installed by the CLI, first thing)."""
    launcher = Launcher(settings, with_ui=with_ui, after_healthy=after_healthy, stop=stop)
    launcher.preflight = preflight
    return launcher.run()
