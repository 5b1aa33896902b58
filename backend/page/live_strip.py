"""The live strip's server side: one metrics poller per page process, pushed to every open page.

The push rides Chainlit's own socket as a `window_message`, which the browser turns into a window
`message` event; public/rchat.js catches it (and keeps Chainlit from echoing it back) and draws the
strip. A snapshot of None hides the strip (a server without /metrics).
"""

from __future__ import annotations

import asyncio

from chainlit.server import sio

from backend.chat.engine_metrics import EngineSnapshot, MetricsPoller
from backend.settings import Settings, page_replica

MESSAGE_KIND = "rchat-live"  # what public/rchat.js looks for in a window message


def deployment() -> str | None:
    """'page 2 of 4' in a page process behind the balancer (RCHAT_PAGE_WORKERS); None for a lone page."""
    replica = page_replica()
    return f"page {replica[0]} of {replica[1]}" if replica else None


async def broadcast(snapshot: EngineSnapshot | None) -> None:
    """One emit to every page connected to this process (socket.io broadcasts when no room is given)."""
    await sio.emit(
        "window_message",
        {"kind": MESSAGE_KIND, "strip": snapshot.as_dict() if snapshot else None, "page": deployment()},
    )


class LiveStrip:
    """The process's one /metrics poller, pushing to every open page (backend/page/services.py)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        """Start polling (at Chainlit's app start-up; a second call does nothing)."""
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(MetricsPoller(self.settings, publish=broadcast).run(), name="live-strip")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            self.task = None
