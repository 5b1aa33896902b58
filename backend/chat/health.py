"""What the UI knows of the model server: /health first, then the launcher's published status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from backend.server_status import holding_back, read_status
from backend.settings import Settings


class HealthChecker:
    """The /health check of one server, shared by every session of a page process: made at app start
    (backend/page/services.py), closed at shutdown. One client for every check (a new client per
    check costs an SSL context: tens of ms)."""

    def __init__(self, settings: Settings, *, http: httpx.AsyncClient | None = None) -> None:
        self.settings = settings
        self.http = http or httpx.AsyncClient(timeout=2.0)
        self.healthy_at = -1e9  # when /health last answered 200 (monotonic)
        self.checking: asyncio.Future[bool] | None = None  # the /health request in flight

    async def __call__(self, *, fresh_for: float = 0.0) -> bool:
        """With `fresh_for`, a success less than that many seconds old answers without asking again,
        and callers that come while a check is in flight wait for its answer: every message checks the
        server first, and 64 sessions asking at once must not put 64 requests before their first tokens.

        While a live launcher says its server is still starting (or restarting), the answer is no even
        if /health answers: its self-test may yet start it again (backend/server_status.holding_back)."""
        if holding_back(read_status(self.settings.status_file)):
            return False
        if fresh_for:
            if time.monotonic() - self.healthy_at < fresh_for:
                return True
            if self.checking is not None and not self.checking.done():
                return await asyncio.shield(self.checking)
        self.checking = asyncio.ensure_future(self._check())
        return await asyncio.shield(self.checking)  # a caller's cancel (Stop) must not cancel the others'

    async def _check(self) -> bool:
        try:
            ok = (await self.http.get(f"{self.settings.server_url}/health")).status_code == 200
        except httpx.HTTPError:
            ok = False
        self.healthy_at = time.monotonic() if ok else -1e9
        return ok

    async def close(self) -> None:
        await self.http.aclose()


async def is_healthy(settings: Settings, *, checker: HealthChecker | None = None, fresh_for: float = 0.0) -> bool:
    """Is the server ready? Through the page's shared checker, or (a command line) a one-off one."""
    if checker is not None:
        return await checker(fresh_for=fresh_for)
    once = HealthChecker(settings)
    try:
        return await once()
    finally:
        await once.close()


def describe_down(settings: Settings) -> str:
    """Why the server is not answering, in words: from the launcher's status when there is one."""
    status = read_status(settings.status_file)
    if status and status.state in ("starting", "restarting", "failed", "stopped"):
        return status.describe()
    return (
        f"The model server at {settings.server_url} is not answering. It may be starting or "
        "restarting; this chat will go on by itself once it is back."
    )


def server_warning(settings: Settings) -> str:
    """What the launcher wants users to know about a running server (the self-test's result), or ''."""
    status = read_status(settings.status_file)
    return status.warning if status else ""


def gave_up(settings: Settings) -> bool:
    status = read_status(settings.status_file)
    return bool(status and status.state in ("failed", "stopped"))


async def wait_until_healthy(
    settings: Settings,
    *,
    on_wait: Callable[[str], Awaitable[None]],
    timeout: float,
    every: float = 2.0,
    checker: HealthChecker | None = None,
) -> bool:
    """Poll until ready (is_healthy); call on_wait(description) while not. False if the launcher gave
    up, or after `timeout` unless a live launcher still says it is starting (its own start-up timeout
    then ends the wait: a question asked early in a long first start waits for it)."""
    deadline = time.monotonic() + timeout
    while not await is_healthy(settings, checker=checker):
        if gave_up(settings):
            return False
        if time.monotonic() > deadline and not holding_back(read_status(settings.status_file)):
            return False
        await on_wait(describe_down(settings))
        await asyncio.sleep(every)
    return True
