"""How the client reads a stream when several chunks arrive in one network read, as they do when
the page is busy (docs/benchmark.md): their text is handed on merged, in order, and nothing before
a mid-stream error is lost.

The server here is an httpx MockTransport that answers with a scripted body in one piece: a real
server's packet boundaries cannot be chosen on demand, and one read holding text and then vLLM's
error chunk is exactly the case to pin down.
"""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from backend.chat.client import Delta, stream_chat
from backend.errors import BackendBusy
from tests.conftest import make_settings


def sse(*chunks: dict, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def content(text: str) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def reasoning(text: str) -> dict:
    return {"choices": [{"index": 0, "delta": {"reasoning": text}, "finish_reason": None}]}


FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
USAGE = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}}


def client_answering(*reads: bytes) -> openai.AsyncOpenAI:
    """A client whose server sends the body in these reads (the pieces arrive one by one)."""

    async def body():
        for piece in reads:
            yield piece

    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body(), headers={"content-type": "text/event-stream"})

    return openai.AsyncOpenAI(
        base_url="http://scripted/v1",
        api_key="none",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )


async def deltas_of(tmp_path, *reads: bytes) -> list[Delta]:
    settings = make_settings(tmp_path)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    return [d async for d in stream_chat(client_answering(*reads), settings, request)]


async def test_one_read_of_many_chunks_comes_out_merged_in_order(tmp_path) -> None:
    body = sse(
        reasoning("Compare "), reasoning("tenths."), content("9.8 "), content("is "), content("bigger."), FINISH, USAGE
    )
    deltas = await deltas_of(tmp_path, body)
    assert [(d.reasoning, d.answer) for d in deltas if d.reasoning or d.answer] == [
        ("Compare tenths.", ""),
        ("", "9.8 is bigger."),
    ]
    assert [d.finish_reason for d in deltas if d.finish_reason] == ["stop"]
    assert next(d.usage for d in deltas if d.usage) == {
        "prompt_tokens": 7,
        "completion_tokens": 5,
        "reasoning_tokens": None,
    }


async def test_text_before_an_error_in_the_same_read_is_kept_and_the_error_is_said(tmp_path) -> None:
    body = sse(content("Partial "), content("answer"), {"error": {"message": "engine died", "code": 500}}, done=False)
    seen: list[Delta] = []
    with pytest.raises(BackendBusy, match="failed in the middle of the answer .engine died"):
        async for delta in stream_chat(
            client_answering(body),
            make_settings(tmp_path),
            {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        ):
            seen.append(delta)
    assert "".join(d.answer for d in seen) == "Partial answer"


@hsettings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.text(alphabet="ab <>/thinkx9.é", min_size=1, max_size=6), min_size=1, max_size=12),
    cuts=st.lists(st.integers(min_value=1, max_value=2000), max_size=8),
)
async def test_however_the_bytes_are_cut_into_reads_the_text_is_the_same(
    tmp_path_factory, pieces: list[str], cuts: list[int]
) -> None:
    """The same stream in one read, one read per chunk, and cut at arbitrary bytes (inside a line,
    inside a UTF-8 character, inside a think tag): the same reasoning and answer text every way."""
    tmp = tmp_path_factory.mktemp("cuts")
    events = [sse(content(p), done=False) for p in pieces] + [sse(FINISH)]
    body = b"".join(events)
    bounds = sorted({c % len(body) for c in cuts} - {0})
    arbitrary = [body[a:b] for a, b in zip([0, *bounds], [*bounds, len(body)], strict=True)]
    texts = []
    for reads in ([body], events, arbitrary):
        deltas = await deltas_of(tmp, *reads)
        texts.append(("".join(d.reasoning for d in deltas), "".join(d.answer for d in deltas)))
    assert texts[0] == texts[1] == texts[2]
