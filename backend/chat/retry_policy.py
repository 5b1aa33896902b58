"""The one retry layer: tenacity around opening a stream, never after a token reached the user.

Retried: connection errors (server starting or restarting), 429 and 5xx. Not retried: 4xx other than
429 (our request is wrong; retrying cannot help) and timeouts after the server accepted the request.
The OpenAI client is built with max_retries=0 so these are the only retries.
"""

from __future__ import annotations

import openai
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_random_exponential


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APITimeoutError):
        return False  # a subclass of APIConnectionError, but the server did get our request
    if isinstance(exc, openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def open_stream_retrying(*, max_retries: int, max_wait: float = 8.0, max_total: float = 60.0) -> AsyncRetrying:
    """Jittered exponential backoff (wait_random_exponential: many clients retrying at once spread out)."""
    return AsyncRetrying(
        retry=retry_if_exception(is_retryable),
        wait=wait_random_exponential(multiplier=0.5, max=max_wait),
        stop=stop_after_attempt(max_retries + 1) | stop_after_delay(max_total),
        reraise=True,
    )
