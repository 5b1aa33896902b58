"""Load through the running chat page's websocket, as browsers would: one headless session per stream.

All sessions connect first (login, socket, the chat-start hook) and only then ask, together: the
clock runs from the first question, so throughput compares with the direct client's, which has no
page to open. Like the direct client, the sessions are spread over client processes (at most
`per_process` each), which meet at a barrier once connected, so the reader is not the limit.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import time
from contextlib import AsyncExitStack
from dataclasses import asdict
from typing import Any

from backend.bench.chainlit_client import ChainlitSession
from backend.bench.direct import STREAMS_PER_PROCESS, shares, span
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


async def _all(
    url: str, prompt: str, concurrency: int, repeat: int, barrier: Any = None
) -> tuple[list[StreamRecord], float]:
    async with AsyncExitStack() as stack:
        sessions = await asyncio.gather(*(stack.enter_async_context(ChainlitSession(url)) for _ in range(concurrency)))
        if barrier is not None:  # every process connected: all ask at once
            await asyncio.to_thread(barrier.wait, 600)
        started = time.monotonic()
        results = await asyncio.gather(*(_asks(s, prompt, repeat) for s in sessions))
        wall = time.monotonic() - started
    return [r for rs in results for r in rs], wall


def _process_main(url: str, prompt: str, concurrency: int, repeat: int, barrier: Any, out: Any) -> None:
    records, _wall = asyncio.run(_all(url, prompt, concurrency, repeat, barrier))
    out.put([asdict(r) for r in records])


def run_ui(
    url: str, prompt: str, *, concurrency: int, repeat: int, per_process: int = STREAMS_PER_PROCESS
) -> tuple[list[StreamRecord], float]:
    """Open `concurrency` sessions, then ask `repeat` questions in each; records and seconds from the first question."""
    split = shares(concurrency, per_process)
    if len(split) == 1:
        return asyncio.run(_all(url, prompt, concurrency, repeat))
    ctx = multiprocessing.get_context("spawn")  # no inherited event loop or sockets
    barrier, out = ctx.Barrier(len(split)), ctx.Queue()
    procs = [ctx.Process(target=_process_main, args=(url, prompt, n, repeat, barrier, out)) for n in split]
    for proc in procs:
        proc.start()
    try:
        batches = [out.get(timeout=1800) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    records = [StreamRecord(**d) for batch in batches for d in batch]
    return records, span(records)  # one clock over every process, as the direct client's
