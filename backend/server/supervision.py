"""One supervised child as a small state machine that never blocks on it.

    STARTING --/health answers--> [CHECKING] --> RUNNING --exits--> BACKOFF --delay over--> STARTING
        \\--exits / hangs / port taken, after it was once ready: a crash, same path as above
        \\--the same before it was ever ready: FAILED (the start is refused, with the log)
    any crash over the restart policy's limit --> GAVE_UP;  stop() --> STOPPED

`tick()` does one step: at most one short /health probe, or one reap of a dead process group. The
launcher ticks every child in turn, so it watches all of them at every moment, a restart's wait
included, and a stop request is seen within one tick.

The hook for checks after start-up: `after_ready` runs in a worker thread each time the child
answers, before it is called ready. It returns None to keep the child, or the reason to start it
again, having already changed what the child will start with (say, `server.launch` = a float32
LaunchSpec). Such a relaunch is not a crash; after MAX_RELAUNCHES in a row the child is kept.
"""

from __future__ import annotations

import concurrent.futures
import enum
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx

from backend.errors import ChatAppError, ServerStartError
from backend.readiness import Awaited, Outcome, Readiness
from backend.server import console
from backend.server.restart_policy import RestartPolicy

REAP_GRACE = 3.0  # a crashed child's leftovers get this long after SIGTERM before SIGKILL
MAX_RELAUNCHES = 3  # the self-test's longest path: bf16 -> bf16 with oneDNN off AMX -> float32, then checked

AfterReady = Callable[[], str | None]


class Child(Protocol):
    """What supervision needs of a process it keeps up (VLLMServer, ChatPage)."""

    name: str
    proc: subprocess.Popen | None
    log_path: Path

    def start(self) -> None: ...  # spawn and return at once; ServerStartError if it cannot be started
    def awaited(self) -> Awaited: ...  # what "ready" means for the process just started
    def start_failure(self, outcome: Outcome) -> ChatAppError: ...  # the error of a first start that failed
    def on_wait(self, outcome: Outcome) -> None: ...  # progress while starting
    def stop(self, *, grace: float) -> int | None: ...
    def log_tail(self, lines: int) -> str: ...


class State(enum.Enum):
    STARTING = "starting"
    CHECKING = "checking"
    RUNNING = "running"
    BACKOFF = "backoff"
    GAVE_UP = "gave up"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass
class Hooks:
    """How a supervised child tells the launcher what happens (console, watchdog, status file)."""

    say: Callable[[str], None]
    spawned: Callable[[int], None]  # a process group to kill should the launcher die
    reaped: Callable[[int], None]
    changed: Callable[[Supervised], None]  # after every change of state


class Supervised:
    def __init__(
        self, child: Child, policy: RestartPolicy, hooks: Hooks, *, after_ready: AfterReady | None = None
    ) -> None:
        self.child, self.policy, self.hooks, self.after_ready = child, policy, hooks, after_ready
        self.state = State.STOPPED
        self.ever_ready = False
        self.error: ChatAppError | None = None  # FAILED: why the first start failed
        self.reason = ""  # the last crash, or why we gave up, in words
        self.restart_at = 0.0
        self.relaunches = 0
        self.relaunch_reason = ""  # why after_ready asked for the relaunch going on (relaunches > 0)
        self._awaited: Awaited | None = None
        self._check: concurrent.futures.Future | None = None
        # Its thread exists only once a check has been submitted. Children are spawned from the main
        # thread only (PR_SET_PDEATHSIG follows the thread that forked), and a check must not spawn.
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="after-ready")

    @property
    def name(self) -> str:
        return self.child.name

    @property
    def restarting(self) -> bool:
        return self.ever_ready and self.state in (State.STARTING, State.CHECKING, State.BACKOFF)

    def begin(self) -> None:
        """The first start: a failure to even launch is the caller's error (nothing to restart yet)."""
        self._launch()

    def tick(self, http: httpx.Client) -> None:
        if self.state is State.STARTING:
            self._tick_starting(http)
        elif self.state is State.CHECKING and self._check is not None and self._check.done():
            self._checked()
        elif self.state is State.RUNNING and self.child.proc is not None and self.child.proc.poll() is not None:
            self._crashed(f"exited with code {self.child.proc.returncode}")
        elif self.state is State.BACKOFF and time.monotonic() >= self.restart_at:
            try:
                self._launch()
            except ServerStartError as err:  # port taken, model gone: one more crash
                self._crashed(str(err).splitlines()[0])

    def stop(self, *, grace: float) -> None:
        """Stop the child; one still starting gets REAP_GRACE: it serves nothing yet, and vLLM's API
        server, interrupted while waiting for its engine, hangs until the SIGKILL at the end of the full grace."""
        if self._check is not None:
            self._check.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._reap(min(grace, REAP_GRACE) if self.state is State.STARTING else grace)
        self._set(State.STOPPED)

    # --- the steps ---
    def _launch(self) -> None:
        self.child.start()
        if self.child.proc is not None:
            self.hooks.spawned(self.child.proc.pid)
        self._awaited = self.child.awaited()
        self._set(State.STARTING)

    def _tick_starting(self, http: httpx.Client) -> None:
        assert self._awaited is not None
        outcome = self._awaited.probe(http)
        if outcome.state is Readiness.WAITING:
            self.child.on_wait(outcome)
        elif outcome.state is Readiness.READY:
            if self.after_ready is None or self.relaunches >= MAX_RELAUNCHES:
                self._ready()
            else:
                self._check = self._pool.submit(self.after_ready)
                self._set(State.CHECKING)
        elif self.ever_ready:
            self._crashed(f"{outcome.reason} while restarting")
        else:
            self.error = self.child.start_failure(outcome)
            self._reap(REAP_GRACE)
            self._set(State.FAILED)

    def _checked(self) -> None:
        assert self._check is not None  # called once the check it started is done
        try:
            relaunch_because = self._check.result()
        except Exception as err:  # noqa: BLE001 - a broken check must not take the server down
            self.hooks.say(console.check_failed(self.name, err))
            relaunch_because = None
        if relaunch_because is None:
            self._ready()
            return
        self.relaunches += 1
        self.relaunch_reason = relaunch_because
        self.hooks.say(console.starting_again(self.name, relaunch_because))
        self._reap(REAP_GRACE)
        try:
            self._launch()
        except ServerStartError as err:
            self._crashed(str(err).splitlines()[0])

    def _ready(self) -> None:
        if self.ever_ready:
            self.hooks.say(console.healthy_again(self.name))
        self.ever_ready, self.relaunches = True, 0
        self._set(State.RUNNING)

    def _crashed(self, reason: str) -> None:
        """Any end we did not ask for: reap what is left, then restart after a backoff or give up."""
        tail = self.child.log_tail(15)
        self._reap(REAP_GRACE)
        decision = self.policy.record_crash()
        self.reason = reason
        if decision.restart:
            self.restart_at = time.monotonic() + decision.delay
            self.hooks.say(console.restarting(self.name, reason, decision, self.policy))
            self._set(State.BACKOFF)
            return
        self.reason = console.gave_up(self.name, reason, decision, self.policy, self.child.log_path)
        self.hooks.say(console.gave_up_error(self.reason, tail))
        self._set(State.GAVE_UP)

    def _reap(self, grace: float) -> None:
        proc = self.child.proc
        if proc is not None:
            self.child.stop(grace=grace)
            self.hooks.reaped(proc.pid)

    def _set(self, state: State) -> None:
        self.state = state
        self.hooks.changed(self)
