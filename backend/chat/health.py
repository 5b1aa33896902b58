"""What the UI knows of the model server: /health first, then the launcher's published status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from backend.settings import Settings
from backend.server.status_file import read_status


_http: httpx.AsyncClient | None = None


async def is_healthy(settings: Settings) -> bool:
    """One GET /health on a shared client (a new client per check costs an SSL context: tens of ms)."""
    global _http
    if _http is None:
        _http = httpx.AsyncClient(timeout=2.0)
    try:
        return (await _http.get(f"{settings.server_url}/health")).status_code == 200
    except httpx.HTTPError:
        return False


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
