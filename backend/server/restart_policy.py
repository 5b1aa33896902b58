"""When a crashed child is started again, and when we stop trying: one named, tested object.

Built from tenacity's policies so the rule reads as it is meant: wait 1, 2, 4 ... s (exponential,
capped at 30 s) before restart n, and stop once more than `max_restarts` crashes fall within
`window` seconds. A crash is anything that ends a child we meant to keep: an exit or a kill while it
ran, or a restart that failed (exited before it was ready, hung past its start-up timeout, found its
port taken). Crashes older than the window are forgotten, so a server that crashes once a day is
restarted every day.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tenacity import RetryCallState, Retrying, stop_after_attempt, wait_exponential
from tenacity.stop import stop_base
from tenacity.wait import wait_base

MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class Decision:
    restart: bool
    delay: float  # seconds to wait before the restart (0 when giving up)
    crashes: int  # crashes within the window, this one included


@dataclass
class RestartPolicy:
    max_restarts: int
    window: float
    wait: wait_base = field(default_factory=lambda: wait_exponential(multiplier=1, min=1, max=MAX_BACKOFF))
    stop: stop_base | None = None  # default: stop_after_attempt(max_restarts + 1)
    crash_times: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.stop is None:
            self.stop = stop_after_attempt(self.max_restarts + 1)

    def record_crash(self, now: float | None = None) -> Decision:
        """Count one crash and say whether to restart, and after how long."""
        now = time.monotonic() if now is None else now
        self.crash_times = [t for t in self.crash_times if now - t < self.window] + [now]
        state = self._retry_state(len(self.crash_times), now)
        if (self.stop or stop_after_attempt(self.max_restarts + 1))(state):
            return Decision(restart=False, delay=0.0, crashes=len(self.crash_times))
        return Decision(restart=True, delay=float(self.wait(state)), crashes=len(self.crash_times))

    def _retry_state(self, crashes: int, now: float) -> RetryCallState:
        """tenacity's policies read the attempt number and the time since the first attempt."""
        state = RetryCallState(retry_object=Retrying(), fn=None, args=(), kwargs={})
        state.attempt_number = crashes
        state.start_time = self.crash_times[0]
        state.outcome_timestamp = now
        return state

    def describe_limit(self) -> str:
        restarts = "restart" if self.max_restarts == 1 else "restarts"
        return f"at most {self.max_restarts} {restarts} in {self.window:.0f} s"
