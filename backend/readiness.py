"""The one "wait until healthy, or it died, or the deadline passed" helper, for every caller.

A `Awaited` says what is awaited: a URL that answers 200 once the thing is up, how long it may take,
and how to tell that it can no longer come up (a child process that exited, a launcher that gave
up). `probe()` looks once and never blocks for longer than one short HTTP request, so a loop that
watches several children at once (the launcher) can call it every tick; `wait_ready()` and
`await_ready()` are the blocking and the asyncio loops for callers that watch only this one.
"""

from __future__ import annotations

import asyncio
import enum
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx

POLL_INTERVAL = 0.5
PROBE_TIMEOUT = 2.0  # one GET; a loopback server that takes longer is not ready


class Readiness(enum.Enum):
    READY = "ready"
    WAITING = "waiting"
    GONE = "gone"  # exited (code 0 included) or otherwise can no longer come up
    TIMED_OUT = "timed out"


@dataclass
class Outcome:
    state: Readiness
    elapsed: float
    reason: str = ""  # why it is gone, in words ("exited with code -9")


def never_gone() -> str | None:
    return None


def process_gone(proc: subprocess.Popen) -> Callable[[], str | None]:
    """A `gone` check for a child process: any exit before it is ready is a failure, code 0 too."""

    def gone() -> str | None:
        code = proc.poll()
        return None if code is None else f"exited with code {code}"

    return gone


@dataclass
class Awaited:
    url: str
    timeout: float
    gone: Callable[[], str | None] = never_gone
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def judge(self, answered: bool) -> Outcome:
        """The state once the URL did or did not answer. Gone wins: an answer on the port of a
        process that has exited comes from someone else."""
        reason = self.gone()
        if reason is not None:
            return Outcome(Readiness.GONE, self.elapsed, reason)
        if answered:
            return Outcome(Readiness.READY, self.elapsed)
        if self.elapsed > self.timeout:
            return Outcome(Readiness.TIMED_OUT, self.elapsed, f"not ready within {self.timeout:.0f} s")
        return Outcome(Readiness.WAITING, self.elapsed)

    def probe(self, http: httpx.Client) -> Outcome:
        try:
            answered = http.get(self.url, timeout=PROBE_TIMEOUT).status_code == 200
        except httpx.HTTPError:
            answered = False  # connection refused until it listens: normal while starting
        return self.judge(answered)

    async def aprobe(self, http: httpx.AsyncClient) -> Outcome:
        try:
            answered = (await http.get(self.url, timeout=PROBE_TIMEOUT)).status_code == 200
        except httpx.HTTPError:
            answered = False
        return self.judge(answered)


def wait_ready(
    awaited: Awaited, *, on_wait: Callable[[Outcome], None] | None = None, interval: float = POLL_INTERVAL
) -> Outcome:
    """Probe until the state is no longer WAITING; `on_wait` is called after each miss."""
    with httpx.Client() as http:
        while (outcome := awaited.probe(http)).state is Readiness.WAITING:
            if on_wait:
                on_wait(outcome)
            time.sleep(interval)
    return outcome


async def await_ready(
    awaited: Awaited,
    *,
    http: httpx.AsyncClient,
    on_wait: Callable[[Outcome], Awaitable[None]] | None = None,
    interval: float = POLL_INTERVAL,
) -> Outcome:
    """The asyncio twin of wait_ready, on the caller's client (the page keeps one for all checks)."""
    while (outcome := await awaited.aprobe(http)).state is Readiness.WAITING:
        if on_wait:
            await on_wait(outcome)
        await asyncio.sleep(interval)
    return outcome
