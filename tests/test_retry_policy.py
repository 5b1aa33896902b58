"""The retry policy: which failures are retried, how often, and that nothing else is."""

from __future__ import annotations

import httpx
import openai
import pytest

from backend.chat.retry_policy import is_retryable, open_stream_retrying

REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


def status_error(code: int) -> openai.APIStatusError:
    response = httpx.Response(code, request=REQUEST, json={"error": {"message": "x"}})
    cls = {429: openai.RateLimitError, 400: openai.BadRequestError, 401: openai.AuthenticationError}.get(
        code, openai.InternalServerError
    )
    return cls("x", response=response, body=None)


@pytest.mark.parametrize(
    ("exc", "retried"),
    [
        (openai.APIConnectionError(request=REQUEST), True),
        (status_error(429), True),
        (status_error(500), True),
        (status_error(503), True),
        (status_error(400), False),
        (status_error(401), False),
        (openai.APITimeoutError(request=REQUEST), False),
        (ValueError("ours"), False),
    ],
)
def test_what_is_retried(exc: BaseException, retried: bool) -> None:
    assert is_retryable(exc) is retried


async def _attempts(failures: list[BaseException], *, max_retries: int) -> tuple[int, object]:
    calls = 0

    async def open_stream():
        nonlocal calls
        calls += 1
        if failures:
            raise failures.pop(0)
        return "stream"

    result: object = None
    try:
        async for attempt in open_stream_retrying(max_retries=max_retries, max_wait=0.01):
            with attempt:
                result = await open_stream()
    except Exception as exc:  # noqa: BLE001
        result = exc
    return calls, result


async def test_connection_errors_are_retried_until_success() -> None:
    calls, result = await _attempts([openai.APIConnectionError(request=REQUEST), status_error(503)], max_retries=3)
    assert (calls, result) == (3, "stream")


async def test_retries_stop_after_the_configured_count_and_reraise() -> None:
    failures = [status_error(500) for _ in range(10)]
    calls, result = await _attempts(failures, max_retries=2)
    assert calls == 3 and isinstance(result, openai.InternalServerError)


async def test_a_bad_request_is_not_retried() -> None:
    calls, result = await _attempts([status_error(400)], max_retries=5)
    assert calls == 1 and isinstance(result, openai.BadRequestError)
