"""Load through the running chat page's websocket, as browsers would: one headless session per stream."""

from __future__ import annotations

import asyncio
import re
import time

from backend.bench.stats import StreamRecord
from backend.bench.chainlit_client import ChainlitSession

TOKENS_IN_STATS = re.compile(r"(\d+) (?:answer )?tokens")


async def _session(url: str, prompt: str, repeat: int) -> list[StreamRecord]:
    records = []
    async with ChainlitSession(url) as session:
        for _ in range(repeat):
            answer = await session.ask(prompt, timeout=600)
            final = "\n".join(answer.texts.values())
            match = TOKENS_IN_STATS.search(final)
            record = StreamRecord(sent_at=answer.sent_at, arrivals=list(answer.token_times),
                                  tokens=int(match.group(1)) if match else len(answer.token_times))
            if not answer.token_times:
                record.error = final[:200] or "no tokens"
            records.append(record)
    return records


async def _all(url: str, prompt: str, concurrency: int, repeat: int) -> list[StreamRecord]:
    results = await asyncio.gather(*(_session(url, prompt, repeat) for _ in range(concurrency)))
    return [r for rs in results for r in rs]


def run_ui(url: str, prompt: str, *, concurrency: int, repeat: int) -> tuple[list[StreamRecord], float]:
    started = time.monotonic()
    records = asyncio.run(_all(url, prompt, concurrency, repeat))
    return records, time.monotonic() - started
