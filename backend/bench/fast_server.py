"""A fake OpenAI-compatible server as fast as a GPU, so the benchmark measures the page apart from the engine.

A fake, because GPU speed can't be had on demand on a CPU machine: every request streams `max_tokens`
tokens (one per chunk, or `--per-chunk` per chunk like vLLM's `--stream-interval`) at `--rate` tokens/s
per stream after `--ttft` seconds, then a usage chunk. The defaults (600 tok/s after 15 ms) are what the
H200 does with the embedded model at one stream (docs/gpu.md). Chunks are laid out on a fixed schedule,
so a server that falls behind sends what is due at once instead of drifting.

    python -m backend.bench.fast_server PORT [--rate 600] [--ttft 0.015] [--per-chunk 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from backend.server import processes

WORD = " tok"


def _chunk(content: str | None = None, finish: str | None = None, usage: dict | None = None) -> bytes:
    choices = (
        []
        if usage
        else [{"index": 0, "delta": {"content": content} if content is not None else {}, "finish_reason": finish}]
    )
    body = {"id": "fast", "object": "chat.completion.chunk", "created": 0, "model": "fast", "choices": choices}
    if usage:
        body["usage"] = usage
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def make_app(*, rate: float, ttft: float, per_chunk: int):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    class _Closing(StreamingResponse):
        """Closes its generator when the response ends: Starlette leaves one that a client's disconnect
        interrupted (mid-`send`) to the garbage collector, which made the `cancelled` count late by seconds."""

        async def __call__(self, scope, receive, send) -> None:
            try:
                await super().__call__(scope, receive, send)
            finally:
                await self.body_iterator.aclose()

    role = _chunk(content="")
    piece = _chunk(content=WORD * per_chunk)
    counts = {"started": 0, "finished": 0, "cancelled": 0}  # GET /stats: did a Stop reach the server?

    async def completions(request: Request):
        body = await request.json()
        tokens = int(body.get("max_tokens") or 256)
        started = time.monotonic()

        async def events():
            counts["started"] += 1
            try:
                async for part in _stream():
                    yield part
            except BaseException:  # the client went away mid-answer: starlette cancels the stream
                counts["cancelled"] += 1
                raise
            counts["finished"] += 1

        async def _stream():
            loop_time = time.monotonic
            await asyncio.sleep(max(0.0, started + ttft - loop_time()))
            yield role
            sent = 0
            while sent < tokens:
                due = started + ttft + sent / rate  # when token number `sent` is due
                wait = due - loop_time()
                if wait > 0:
                    await asyncio.sleep(wait)
                n = min(per_chunk, tokens - sent)
                yield piece if n == per_chunk else _chunk(content=WORD * n)
                sent += n
            yield _chunk(finish="length")
            yield _chunk(usage={"prompt_tokens": 16, "completion_tokens": tokens, "total_tokens": tokens + 16})
            yield b"data: [DONE]\n\n"

        return _Closing(events(), media_type="text/event-stream")

    async def health(_request: Request):
        return JSONResponse({})

    async def version(_request: Request):
        return JSONResponse({"version": "fast-server"})

    async def stats(_request: Request):
        return JSONResponse(counts)

    async def models(_request: Request):
        return JSONResponse({"object": "list", "data": [{"id": "fast", "object": "model"}]})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/health", health),
            Route("/version", version),
            Route("/v1/models", models),
            Route("/stats", stats),
        ]
    )


@contextmanager
def fast_server(
    *, port: int, log_dir: Path, rate: float, ttft: float, per_chunk: int = 1, timeout: float = 30
) -> Iterator[str]:
    """Start the fast server as a child process group; yield its URL once /health answers; stop it after."""
    argv = [
        sys.executable,
        "-m",
        "backend.bench.fast_server",
        str(port),
        "--rate",
        str(rate),
        "--ttft",
        str(ttft),
        "--per-chunk",
        str(per_chunk),
    ]
    log = log_dir / f"fast-server-{port}.log"
    proc = processes.spawn_group(argv, env=None, log_path=log, cwd=Path(__file__).resolve().parents[2])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the fast server exited with code {proc.returncode}:\n{log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the fast server did not answer within {timeout:.0f} s; see {log}")
            time.sleep(0.2)
        yield url
    finally:
        processes.stop_group(proc, grace=3)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m backend.bench.fast_server",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("port", type=int)
    p.add_argument("--rate", type=float, default=600.0, help="tokens/s per stream (default 600)")
    p.add_argument("--ttft", type=float, default=0.015, help="seconds to the first token (default 0.015)")
    p.add_argument("--per-chunk", type=int, default=1, help="tokens per streamed chunk (vLLM's --stream-interval)")
    args = p.parse_args(argv)
    import uvicorn

    uvicorn.run(
        make_app(rate=args.rate, ttft=args.ttft, per_chunk=args.per_chunk),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
