"""Streams tokens to a Chainlit message or step in batches.

Chainlit sends one socket event per `stream_token`, and falls behind on fast streams (Chainlit#2604),
so tokens are collected and sent at most every `interval` seconds; the first one goes out at once.
"""

from __future__ import annotations

import time

import chainlit as cl


class TokenBatcher:
    """Collects tokens and streams them to a message or step at most every `interval` seconds."""

    def __init__(self, target: cl.Message | cl.Step, interval: float) -> None:
        self.target, self.interval = target, interval
        self.buffer, self.last_flush, self.text = "", 0.0, ""

    async def add(self, token: str) -> None:
        self.buffer += token
        self.text += token
        if time.monotonic() - self.last_flush >= self.interval:  # the first token goes out at once
            await self.flush()

    async def flush(self) -> None:
        if self.buffer:
            await self.target.stream_token(self.buffer)
            self.buffer = ""
        self.last_flush = time.monotonic()
