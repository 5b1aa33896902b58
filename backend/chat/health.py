"""What the UI knows of the model server: /health first, then the launcher's published status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from backend.server_status import holding_back, read_status
from backend.settings import Settings

_http: httpx.AsyncClient | None = None
_healthy_at: dict[str, float] = {}  # server URL -> when /health last answered 200 (monotonic)
_checking: dict[str, asyncio.Future[bool]] = {}  # server URL -> the /health request in flight


async def is_healthy(settings: Settings, *, fresh_for: float = 0.0) -> bool:
    """One GET /health on a shared client (a new client per check costs an SSL context: tens of ms).

    With `fresh_for`, a success less than that many seconds old answers without asking again, and
    callers that come while a check is in flight wait for its answer: every message checks the server
    first, and 64 sessions asking at once must not put 64 requests before their first tokens. A server
    that died meanwhile fails the request itself, which says so in words.

    While a live launcher says its server is still starting (or restarting), the answer is no even
    if /health answers: its self-test may yet start it again (backend/server_status.holding_back).
    """
    if holding_back(read_status(settings.status_file)):
        return False
    url = settings.server_url
    if fresh_for:
        if time.monotonic() - _healthy_at.get(url, -1e9) < fresh_for:
            return True
        if (pending := _checking.get(url)) is not None and not pending.done():
            return await asyncio.shield(pending)
    check = asyncio.ensure_future(_check(url))
    _checking[url] = check
    return await asyncio.shield(check)  # a caller's cancel (Stop) must not cancel the others' answer


async def _check(url: str) -> bool:
    global _http
    if _http is None:
        _http = httpx.AsyncClient(timeout=2.0)
    try:
        ok = (await _http.get(f"{url}/health")).status_code == 200
    except httpx.HTTPError:
        ok = False
    if ok:
        _healthy_at[url] = time.monotonic()
    else:
        _healthy_at.pop(url, None)
    return ok


def describe_down(settings: Settings) -> str:
    """Why the server is not answering, in words: from the launcher's status when there is one."""
    status = read_status(settings.status_file)
    if status and status.state in ("starting", "restarting", "failed", "stopped"):
        return status.describe()
    return (f"The model server at {settings.server_url} is not answering. It may be starting or "
            "restarting; this chat will go on by itself once it is back.")


def server_warning(settings: Settings) -> str:
    """What the launcher wants users to know about a running server (the self-test's verdict), or ''."""
    status = read_status(settings.status_file)
    return status.warning if status else ""


def gave_up(settings: Settings) -> bool:
    status = read_status(settings.status_file)
    return bool(status and status.state in ("failed", "stopped"))


async def wait_until_healthy(settings: Settings, *, on_wait: Callable[[str], Awaitable[None]],
                             timeout: float, every: float = 2.0) -> bool:
    """Poll until ready (is_healthy); call on_wait(description) while not. False if the launcher gave
    up, or after `timeout` unless a live launcher still says it is starting (its own start-up timeout
    then ends the wait: a question asked early in a long first start waits for it)."""
    deadline = time.monotonic() + timeout
    while not await is_healthy(settings):
        if gave_up(settings):
            return False
        if time.monotonic() > deadline and not holding_back(read_status(settings.status_file)):
            return False
        await on_wait(describe_down(settings))
        await asyncio.sleep(every)
    return True
