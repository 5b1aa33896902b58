"""What the UI knows of the model server: /health first, then the launcher's published status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from backend.settings import Settings
from backend.server.status_file import read_status


_http: httpx.AsyncClient | None = None
_healthy_at: dict[str, float] = {}  # server URL -> when /health last answered 200 (monotonic)


async def is_healthy(settings: Settings, *, fresh_for: float = 0.0) -> bool:
    """One GET /health on a shared client (a new client per check costs an SSL context: tens of ms).

    With `fresh_for`, a success less than that many seconds old answers without asking again: every
    message checks the server first, and 64 sessions asking at once put 64 requests before their
    first tokens. A server that died meanwhile fails the request itself, which says so in words.
    """
    global _http
    url = settings.server_url
    if fresh_for and time.monotonic() - _healthy_at.get(url, -1e9) < fresh_for:
        return True
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


def gave_up(settings: Settings) -> bool:
    status = read_status(settings.status_file)
    return bool(status and status.state in ("failed", "stopped"))


async def wait_until_healthy(settings: Settings, *, on_wait: Callable[[str], Awaitable[None]],
                             timeout: float, every: float = 2.0) -> bool:
    """Poll /health; call on_wait(description) while down. False on timeout or if the launcher gave up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await is_healthy(settings):
            return True
        await on_wait(describe_down(settings))
        if gave_up(settings):
            return False
        await asyncio.sleep(every)
    return False
