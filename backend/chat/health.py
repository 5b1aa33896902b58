"""What the UI knows of the model server: /health first, then the launcher's published status."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx

from backend.readiness import Awaited, Outcome, Verdict, await_ready
from backend.server_status import read_status
from backend.settings import Settings

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


def gave_up(settings: Settings) -> bool:
    status = read_status(settings.status_file)
    return bool(status and status.state in ("failed", "stopped"))


async def wait_until_healthy(settings: Settings, *, on_wait: Callable[[str], Awaitable[None]],
                             timeout: float, every: float = 2.0) -> bool:
    """Poll /health; call on_wait(description) while down. False on timeout or if the launcher gave up."""
    global _http
    if _http is None:
        _http = httpx.AsyncClient(timeout=2.0)

    async def show(_outcome: Outcome) -> None:
        await on_wait(describe_down(settings))

    def launcher_gave_up() -> str | None:
        return describe_down(settings) if gave_up(settings) else None

    awaited = Awaited(f"{settings.server_url}/health", timeout, gone=launcher_gave_up)
    outcome = await await_ready(awaited, http=_http, on_wait=show, interval=every)
    return outcome.verdict is Verdict.READY
