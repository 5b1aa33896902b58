"""Load straight against vLLM's OpenAI API: N concurrent streams, spread over client processes."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict

from backend.bench.stats import StreamRecord

STREAMS_PER_PROCESS = 32  # one asyncio process parses ~5-10k chunks/s; more streams need more processes


def shares(concurrency: int, per_process: int = STREAMS_PER_PROCESS) -> list[int]:
    """The streams of each client process: at most `per_process` each, as even as can be."""
    processes = max(1, -(-concurrency // max(1, per_process)))
    return [concurrency // processes + (1 if i < concurrency % processes else 0) for i in range(processes)]


async def _one_stream(client, model: str, prompt: str, max_tokens: int) -> StreamRecord:
    record = StreamRecord(sent_at=time.monotonic())
    try:
        stream = await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                record.arrivals.append(time.monotonic())
            if chunk.usage:
                record.tokens = chunk.usage.completion_tokens
    except Exception as exc:  # noqa: BLE001 - a failed stream is counted, not fatal
        record.error = f"{type(exc).__name__}: {exc}"[:200]
    return record


async def _streams(
    url: str, api_key: str, model: str, prompt: str, *, streams: int, repeat: int, max_tokens: int
) -> list[StreamRecord]:
    import httpx
    from openai import AsyncOpenAI

    limits = httpx.Limits(max_connections=streams + 4, max_keepalive_connections=streams + 4)
    client = AsyncOpenAI(
        base_url=f"{url}/v1", api_key=api_key, max_retries=0, http_client=httpx.AsyncClient(limits=limits, timeout=600)
    )

    async def worker() -> list[StreamRecord]:
        return [await _one_stream(client, model, prompt, max_tokens) for _ in range(repeat)]

    results = await asyncio.gather(*(worker() for _ in range(streams)))
    await client.close()
    return [r for rs in results for r in rs]


def _process_main(args: tuple) -> list[dict]:
    url, api_key, model, prompt, streams, repeat, max_tokens = args
    records = asyncio.run(_streams(url, api_key, model, prompt, streams=streams, repeat=repeat, max_tokens=max_tokens))
    return [asdict(r) for r in records]


def run_direct(
    url: str,
    api_key: str,
    model: str,
    prompt: str,
    *,
    concurrency: int,
    repeat: int,
    max_tokens: int,
    per_process: int = STREAMS_PER_PROCESS,
) -> tuple[list[StreamRecord], float]:
    """Run `concurrency` streams (each `repeat` requests in a row); return records and wall seconds."""
    split = shares(concurrency, per_process)
    started = time.monotonic()
    if len(split) == 1:
        records = asyncio.run(
            _streams(url, api_key, model, prompt, streams=concurrency, repeat=repeat, max_tokens=max_tokens)
        )
    else:
        with ProcessPoolExecutor(len(split)) as pool:
            jobs = [(url, api_key, model, prompt, n, repeat, max_tokens) for n in split]
            records = [StreamRecord(**d) for batch in pool.map(_process_main, jobs) for d in batch]
        return records, span(records)  # the processes' start-up is not the server's time
    return records, time.monotonic() - started


def span(records: list[StreamRecord]) -> float:
    """Seconds from the first request sent to the last token received (one clock: monotonic is system-wide)."""
    ends = [r.arrivals[-1] if r.arrivals else r.sent_at for r in records]
    return max(ends) - min(r.sent_at for r in records)
