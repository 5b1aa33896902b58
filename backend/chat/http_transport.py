"""openai's httpx client on aiohttp: its C HTTP parser instead of httpcore/h11's pure-Python one.

openai documents this (`openai.DefaultAioHttpClient`, the `aiohttp` extra, via httpx-aiohttp). Under 64
streaming sessions httpcore's read path was the largest single cost of the page process; on aiohttp
the page spent a third less CPU per token (docs/benchmark.md).

One thing is mended here: httpx-aiohttp maps every aiohttp connection error to `httpx.ConnectTimeout`,
so a refused connection or a server that hung up (what a starting, crashing or restarting vLLM does)
would read as a timeout, which openai reports as `APITimeoutError` and we do not retry. Such errors
become httpx's own `ConnectError` / `ReadError` again, as httpcore raises them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import cast

import aiohttp
import httpx
import openai
from httpx_aiohttp import AiohttpTransport


@contextlib.contextmanager
def _hang_ups_as_network_errors(request: httpx.Request, *, reading: bool) -> Iterator[None]:
    try:
        yield
    except httpx.TimeoutException as exc:
        cause = exc.__cause__
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, aiohttp.ServerTimeoutError):
            error = httpx.ReadError if reading else httpx.ConnectError
            raise error(f"{type(cause).__name__}: {cause}", request=request) from cause
        raise


class _Body(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, request: httpx.Request) -> None:
        self.inner, self.request = inner, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _hang_ups_as_network_errors(self.request, reading=True):
            async for data in self.inner:
                yield data

    async def aclose(self) -> None:
        await self.inner.aclose()


class Transport(AiohttpTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        with _hang_ups_as_network_errors(request, reading=False):
            response = await super().handle_async_request(request)
        response.stream = _Body(cast(httpx.AsyncByteStream, response.stream), request)  # async: this transport's own
        return response


LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)  # openai's own defaults


def http_client(timeout: httpx.Timeout) -> httpx.AsyncClient:
    """What `openai.DefaultAioHttpClient` gives, on the transport above."""
    return openai.DefaultAioHttpClient(timeout=timeout, limits=LIMITS, transport=Transport(limits=LIMITS))
