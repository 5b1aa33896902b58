"""Streams one chat completion from the OpenAI-compatible server and turns failures into our errors.

`stream_chat()` yields `Delta`s: reasoning text (from `delta.reasoning`, `delta.reasoning_content`
or inline `<think>` tags), answer text, and at the end the finish reason and token usage.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
import openai

from backend.chat.http_transport import http_client
from backend.chat.reasoning import ThinkTagParser
from backend.chat.retry_policy import open_stream_retrying
from backend.errors import BackendBusy, BackendRejected, BackendTimeout, BackendUnavailable, PromptTooLong
from backend.settings import Settings


@dataclass
class Delta:
    reasoning: str = ""
    answer: str = ""
    finish_reason: str | None = None
    usage: dict[str, int | None] = field(default_factory=dict)  # a count the server left out is None


CANNOT_CAP = (
    "This model server cannot cap thinking: it runs without a reasoning parser (vLLM's "
    "--reasoning-parser, RCHAT_REASONING_PARSER). Set the thinking budget to “No cap” in the composer, "
    "or restart the server with a reasoning parser."
)


def make_client(settings: Settings, *, api_key: str) -> openai.AsyncOpenAI:
    timeout = httpx.Timeout(settings.request_timeout, connect=settings.connect_timeout)
    return openai.AsyncOpenAI(
        base_url=f"{settings.server_url}/v1",
        api_key=api_key or "none",
        timeout=timeout,
        max_retries=0,
        http_client=http_client(timeout),
    )


def translate(exc: BaseException, settings: Settings) -> Exception:
    """Map openai/httpx/asyncio failures onto the errors a user can act on."""
    if isinstance(exc, (openai.APITimeoutError, asyncio.TimeoutError)):
        return BackendTimeout(
            "The model server took too long to answer and the request was cut off. "
            "It may be overloaded: try again in a moment, or ask for a shorter answer."
        )
    if isinstance(exc, openai.APIConnectionError):
        return BackendUnavailable(
            "The model server cannot be reached right now (it may be starting or "
            "restarting). Your message is kept: send it again in a moment."
        )
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.NetworkError)):  # mid-stream: httpx's own errors
        return BackendUnavailable(
            "The connection to the model server broke in the middle of the answer (it "
            "may have crashed or be restarting). Send your message again in a moment."
        )
    if isinstance(exc, openai.APIError) and "thinking_token_budget" in str(exc.message):
        return BackendRejected(CANNOT_CAP)  # refused up front (HTTP 400) or in the stream's first chunk
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc, settings)
    if isinstance(exc, openai.APIError):  # an error chunk in the middle of the stream (_api_error)
        return BackendBusy(
            f"The model server failed in the middle of the answer ({exc.message[:300]}). "
            "Send your message again; if it keeps failing, ask whoever runs the server to check its log."
        )
    return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


def _status_error(exc: openai.APIStatusError, settings: Settings) -> Exception:
    """An HTTP error status from the server, in words."""
    text = _error_text(exc)
    if exc.status_code == 400 and ("context length" in text or "maximum" in text and "token" in text):
        return PromptTooLong(
            f"This conversation is too long for the model's context "
            f"({settings.context_tokens} tokens). Start a new chat or shorten the message."
        )
    if exc.status_code == 429 or exc.status_code >= 500:
        return BackendBusy(
            f"The model server is busy or failing (HTTP {exc.status_code}) even after "
            f"{settings.max_retries} retries. Try again in a minute."
        )
    if exc.status_code in (401, 403):
        return BackendRejected("The model server refused our API key. Check RCHAT_API_KEY matches the server's key.")
    return BackendRejected(f"The model server rejected the request (HTTP {exc.status_code}): {text[:300]}")


def _error_text(exc: openai.APIStatusError) -> str:
    body: Any = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return str(inner.get("message", inner))
        return str(body.get("message", inner))
    return str(exc.message)


def _reasoning_field(delta: dict[str, Any]) -> str:
    """vLLM streams reasoning as `reasoning` (newer) or `reasoning_content` (older): read both."""
    return delta.get("reasoning") or delta.get("reasoning_content") or ""


async def _open(client: openai.AsyncOpenAI, settings: Settings, request: dict[str, Any]) -> httpx.Response:
    """The streaming HTTP response, its body unread; openai has raised already for an error status."""
    async for attempt in open_stream_retrying(max_retries=settings.max_retries):
        with attempt:
            return (await client.chat.completions.with_raw_response.create(**request)).http_response
    raise AssertionError("unreachable: the retrying raises the last error when it gives up (reraise=True)")


async def _reads(response: httpx.Response) -> AsyncGenerator[list[dict[str, Any]], None]:
    """The server-sent events' JSON, one list per network read, read here rather than by openai's AsyncStream.

    openai builds a typed object per chunk, which took a quarter of the page process's time under
    64 streaming sessions (docs/benchmark.md); a chunk is small JSON, and we read four fields of it.
    A read brings every chunk that arrived since the last one: handled together, the per-chunk
    cost (a timeout, a stop check, a page update) is paid once per read, so a page that falls
    behind catches up in larger steps instead of falling further behind.
    """
    pending = b""
    body = cast(AsyncGenerator[bytes, None], response.aiter_bytes())  # typed an iterator, it is a generator
    async with contextlib.aclosing(body) as reads:  # closed here, not by the GC
        async for data in reads:
            *lines, pending = (pending + data).split(b"\n")
            chunks = [chunk for line in lines if (chunk := _event(line)) is not None]
            good = list(itertools.takewhile(lambda chunk: not _is_error(chunk), chunks))
            if good:
                yield good  # what came before a failure in the same read reaches the page too
            if len(good) < len(chunks):
                raise _api_error(chunks[len(good)], response)
    if (last := _event(pending)) is not None:  # a body that ended without its last newline
        if _is_error(last):
            raise _api_error(last, response)
        yield [last]


def _event(line: bytes) -> dict[str, Any] | None:
    """One `data:` line's JSON; None for separators, comments, `event:` lines and `[DONE]`."""
    if not line.startswith(b"data:"):
        return None
    data = line[5:].strip()
    if data == b"[DONE]":
        return None  # read on to the end of the body, so httpx's own generators finish here too
    return json.loads(data)


def _is_error(chunk: Any) -> bool:
    return isinstance(chunk, dict) and bool(chunk.get("error"))  # vLLM reports a failure mid-stream this way


def _api_error(chunk: dict[str, Any], response: httpx.Response) -> openai.APIError:
    error = chunk["error"]
    message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
    return openai.APIError(message, request=response.request, body=error)


async def stream_chat(
    client: openai.AsyncOpenAI, settings: Settings, request: dict[str, Any], *, starts_in_reasoning: bool = False
) -> AsyncGenerator[Delta, None]:
    """Yield Deltas for one completion (the text of one read merged); raise only errors from backend.errors."""
    request = {**request, "stream": True, "stream_options": {"include_usage": True}}
    parser = ThinkTagParser(starts_in_reasoning=starts_in_reasoning)
    try:
        stream = await _open(client, settings, request)
    except Exception as exc:  # every failure becomes one of ours
        raise translate(exc, settings) from exc
    try:
        reads = _reads(stream)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.request_timeout
        wait = settings.first_token_timeout  # then idle_timeout between reads
        while True:
            wait = min(wait, deadline - loop.time())
            try:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a Stop's cancellation
                # when a token arrives at the same moment.
                async with asyncio.timeout(max(wait, 0.001)):
                    chunks = await anext(reads)
            except StopAsyncIteration:
                break
            wait = settings.idle_timeout
            for delta in _read_deltas(chunks, parser):
                yield delta
        for seg in parser.finish():
            yield _text_delta(seg.kind, seg.text)
    except (TimeoutError, openai.OpenAIError, httpx.HTTPError, ValueError) as exc:
        raise translate(exc, settings) from exc
    finally:
        # Closing the HTTP response is what makes vLLM abort the request, so it goes first: closing
        # our generator leaves httpx's inner ones to the garbage collector, whose late close marked
        # the response closed without closing its connection (a Stop then let vLLM run on).
        await stream.aclose()
        with contextlib.suppress(RuntimeError):  # closed here, in this task: left to the garbage
            await reads.aclose()  # collector it would close in another and warn


def _text_delta(kind: str, text: str) -> Delta:
    return Delta(reasoning=text) if kind == "reasoning" else Delta(answer=text)


class _Runs:
    """Deltas in order, each run of one kind of text joined into one Delta.

    Content waits here and goes to the think-tag parser a run at a time, not a chunk at a time.
    """

    def __init__(self, parser: ThinkTagParser) -> None:
        self.parser = parser
        self.out: list[Delta] = []
        self.content: list[str] = []

    def text(self, kind: str, text: str) -> None:
        if not text:
            return
        if self.out and _text_kind(self.out[-1]) == kind:
            setattr(self.out[-1], kind, getattr(self.out[-1], kind) + text)
        else:
            self.out.append(_text_delta(kind, text))

    def feed(self, *, finished: bool = False) -> None:
        """The content held so far through the parser; with `finished`, what the parser held back too."""
        segments = self.parser.feed("".join(self.content)) if self.content else []
        self.content.clear()
        for seg in segments + (self.parser.finish() if finished else []):
            self.text(seg.kind, seg.text)

    def other(self, delta: Delta) -> None:
        self.feed()
        self.out.append(delta)


def _read_deltas(chunks: list[dict[str, Any]], parser: ThinkTagParser) -> list[Delta]:
    """One read's chunks as Deltas, in order, each run of one kind of text joined into one Delta.

    Under load a read holds dozens of one-token chunks, and each text Delta becomes a page update:
    joined, they cost one.
    """
    runs = _Runs(parser)
    for chunk in chunks:
        if usage := chunk.get("usage"):
            details = usage.get("completion_tokens_details") or {}  # vLLM fills it with a reasoning parser
            runs.other(
                Delta(
                    usage={
                        "prompt_tokens": usage.get("prompt_tokens"),
                        "completion_tokens": usage.get("completion_tokens"),
                        "reasoning_tokens": details.get("reasoning_tokens"),
                    }
                )
            )
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if reasoning := _reasoning_field(delta):
                runs.feed()
                runs.text("reasoning", reasoning)
            if content := delta.get("content"):
                runs.content.append(content)
            if choice.get("finish_reason"):
                runs.feed(finished=True)
                runs.other(Delta(finish_reason=choice["finish_reason"]))
    runs.feed()
    return runs.out


def _text_kind(delta: Delta) -> str | None:
    """ "reasoning" or "answer" for a Delta that holds only that text; None for anything else."""
    if delta.finish_reason or delta.usage or bool(delta.reasoning) == bool(delta.answer):
        return None
    return "reasoning" if delta.reasoning else "answer"
