"""Streams tokens to a Chainlit message or step in batches, less often when many answers stream at once.

Chainlit sends one socket event per `stream_token`, and falls behind on fast streams (Chainlit#2604),
so tokens are collected and sent at most every `interval` seconds; the first one goes out at once.
Each update costs the page process about the same whatever its size, so with more than
STREAMS_AT_BASE answers streaming in this process the interval grows in proportion (up to
MAX_INTERVAL): the page then sends fewer, larger updates instead of falling behind all of them.
One answer alone keeps the base interval (RCHAT_UI_FLUSH_INTERVAL), so it still streams smoothly.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import chainlit as cl

STREAMS_AT_BASE = 16  # up to this many answers at once, updates go out every base interval
MAX_INTERVAL = 0.25  # seconds: the longest wait between updates under any load


class StreamCounter:
    """How many answers stream in this page process now (one per process: backend/page/services.py)."""

    def __init__(self) -> None:
        self.now = 0

    @contextmanager
    def streaming(self) -> Iterator[None]:
        """Count one answer as streaming while inside."""
        self.now += 1
        try:
            yield
        finally:
            self.now -= 1


def load_interval(base: float, streams: int) -> float:
    """The interval between updates with `streams` answers streaming."""
    return min(max(base, MAX_INTERVAL), base * max(1.0, streams / STREAMS_AT_BASE))


def _socket_id() -> str | None:
    try:
        return getattr(cl.context.session, "socket_id", None)  # a websocket session's; an HTTP one has none
    except Exception:  # noqa: BLE001 - no websocket session (a test's fake, a command line)
        return None


class TokenBatcher:
    """Collects tokens and streams them to a message or step at most every `interval` seconds."""

    def __init__(self, target: cl.Message | cl.Step, interval: float, streams: StreamCounter | None = None) -> None:
        self.target, self.interval, self.streams = target, interval, streams
        self.buffer, self.last_flush, self.text = "", 0.0, ""
        self.socket: str | None = None  # the tab's socket when tokens last went out

    async def add(self, token: str) -> None:
        self.buffer += token
        self.text += token
        now_streaming = self.streams.now if self.streams is not None else 1
        if time.monotonic() - self.last_flush >= load_interval(self.interval, now_streaming):  # the first goes at once
            await self.flush()

    async def flush(self) -> None:
        if self.buffer:
            socket = _socket_id()
            if self.socket is not None and socket != self.socket:
                # The tab reconnected (a network drop): tokens sent meanwhile were lost on the way,
                # so it gets the whole text so far once, then the stream goes on.
                await self._resend()
            else:
                await self.target.stream_token(self.buffer)
            self.socket, self.buffer = socket, ""
        self.last_flush = time.monotonic()

    async def _resend(self) -> None:
        if isinstance(self.target, cl.Message):
            self.target.content = self.text
        else:
            self.target.output = self.text
        await self.target.update()
