"""Load through the running chat page's websocket, as browsers would: one headless session per stream.

All sessions connect first (login, socket, the chat-start hook) and only then ask, together: the
clock runs from the first question, so throughput compares with the direct client's, which has no
page to open.
"""

from __future__ import annotations

import asyncio
import re
import time
from contextlib import AsyncExitStack

from backend.bench.chainlit_client import ChainlitSession
from backend.bench.stats import StreamRecord

TOKENS_IN_STATS = re.compile(r"(\d+) (?:answer )?tokens")


async def _asks(session: ChainlitSession, prompt: str, repeat: int) -> list[StreamRecord]:
    records = []
    for _ in range(repeat):
        answer = await session.ask(prompt, timeout=600)
        final = "\n".join(answer.texts.values())
        match = TOKENS_IN_STATS.search(final)
        record = StreamRecord(
            sent_at=answer.sent_at,
            arrivals=list(answer.token_times),
            tokens=int(match.group(1)) if match else len(answer.token_times),
        )
        if not answer.token_times:
            record.error = final[:200] or "no tokens"
        records.append(record)
    return records


async def _all(url: str, prompt: str, concurrency: int, repeat: int) -> tuple[list[StreamRecord], float]:
    async with AsyncExitStack() as stack:
        sessions = await asyncio.gather(*(stack.enter_async_context(ChainlitSession(url)) for _ in range(concurrency)))
        started = time.monotonic()
        results = await asyncio.gather(*(_asks(s, prompt, repeat) for s in sessions))
        wall = time.monotonic() - started
    return [r for rs in results for r in rs], wall


def run_ui(url: str, prompt: str, *, concurrency: int, repeat: int) -> tuple[list[StreamRecord], float]:
    """Open `concurrency` sessions, then ask `repeat` questions in each; records and seconds from the first question."""
    return asyncio.run(_all(url, prompt, concurrency, repeat))
