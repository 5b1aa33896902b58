"""The page's HTTP transport (aiohttp under openai's httpx client) says the right thing when a server hangs up.

httpx-aiohttp maps a refused or dropped connection to a timeout; backend/chat/http_transport.py maps
them back, so a user reads "cannot be reached" / "broke in the middle" and a refused start is retried.
The server here is a few lines of asyncio over real sockets, scripted, because a real server cannot
be made to hang up at an exact moment on demand.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from backend.chat.client import make_client, stream_chat
from backend.errors import BackendUnavailable
from tests.conftest import make_settings

CHUNK = {"choices": [{"index": 0, "delta": {"content": "Partial answer"}, "finish_reason": None}]}
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def sse_chunk(body: dict) -> bytes:
    data = b"data: " + json.dumps(body).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


@contextlib.asynccontextmanager
async def scripted_server(reply: bytes):
    """Reads each request's head, writes `reply`, then closes the connection; yields (base_url, connections)."""
    connections = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}", connections


async def read_all(settings, deltas: list) -> None:
    client = make_client(settings, api_key="x")
    try:
        async for delta in stream_chat(
            client, settings, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        ):
            deltas.append(delta)
    finally:
        await client.close()


async def test_a_server_that_hangs_up_before_answering_is_unreachable_and_retried(tmp_path) -> None:
    async with scripted_server(b"") as (url, connections):
        settings = make_settings(tmp_path, base_url=url, max_retries=2)
        with pytest.raises(BackendUnavailable, match="cannot be reached"):
            await read_all(settings, [])
    assert len(connections) == 3  # the first try and two retries: a restarting server gets its chance


async def test_a_server_that_hangs_up_mid_answer_keeps_the_text_and_says_so(tmp_path) -> None:
    async with scripted_server(HEAD + sse_chunk(CHUNK)) as (url, connections):
        settings = make_settings(tmp_path, base_url=url, max_retries=2)
        deltas: list = []
        with pytest.raises(BackendUnavailable, match="broke in the middle of the answer"):
            await read_all(settings, deltas)
    assert "".join(d.answer for d in deltas) == "Partial answer"
    assert len(connections) == 1  # never retried once text reached the user


async def test_a_refused_connection_is_unreachable_not_a_timeout(tmp_path) -> None:
    settings = make_settings(tmp_path, max_retries=1)  # nothing listens on this fresh port
    with pytest.raises(BackendUnavailable, match="cannot be reached"):
        await read_all(settings, [])
