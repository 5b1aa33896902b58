"""Answering one question on the page: wait for the server, stream, and end in words whatever happens.

A stop (CancelledError or the session's stop flag) or an error keeps what was already streamed and
marks it; no exception text reaches the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import openai

from backend.chat.client import stream_chat
from backend.chat.conversation import Conversation
from backend.chat.sampling import Sampling, draws_seeds, request_params, seed_source
from backend.errors import BackendUnavailable, ChatAppError, user_message
from backend.page.answer_view import AnswerView
from backend.page.notices import notice, wait_for_backend
from backend.page.token_batcher import streaming
from backend.qa.engine import engine_facts
from backend.records import AnswerResult
from backend.settings import Settings

log = logging.getLogger(__name__)


class StopRequested(Exception):
    """The user pressed Stop (seen through the session flag, in case the task's cancel was lost)."""


async def answer(*, client: openai.AsyncOpenAI, settings: Settings, conversation: Conversation,
                 sampling: Sampling, stop_requested: Callable[[], bool] = lambda: False, sample: int = 1,
                 actions: Callable[[], list] = list) -> AnswerResult:
    """Stream one answer to the last question; store it with its stamp; return what happened."""
    if not await wait_for_backend(settings):
        return AnswerResult(outcome="backend down")
    messages, dropped = conversation.messages(system_prompt=sampling.system_prompt,
                                              context_tokens=settings.context_tokens,
                                              answer_tokens=sampling.max_tokens)
    if dropped:
        await notice(f"The conversation is longer than the model's context, so the {dropped} oldest "
                     "message(s) were left out of what the model sees.")
    question = conversation.turns[-1] if conversation.turns else None
    engine = await engine_facts(settings)
    draw = draws_seeds(engine)
    request = {"model": settings.resolved_served_name, "messages": messages, **request_params(sampling, draw_seed=draw)}
    view = AnswerView(settings, question=question.content if question else "",
                      question_id=question.message_id if question else "", sample=sample, request=request,
                      engine=engine, seed_source=seed_source(sampling, draw_seed=draw))
    try:
        with streaming():
            await _stream(client, settings, request, view, sampling, stop_requested)
        outcome = "complete"
        await view.finish(actions=actions())
    except (asyncio.CancelledError, StopRequested):
        outcome = view.stats.finish_reason = "stopped"
        await view.finish(note="Stopped by you.", outcome=outcome, actions=actions())
    except ChatAppError as err:
        view.stats.finish_reason = "error"
        outcome = "interrupted" if isinstance(err, BackendUnavailable) else "error"
        kept = " What was already written is kept above." if view.answer_text or view.reasoning_text else ""
        await view.finish(note=f"{err}{kept}", outcome=outcome, actions=actions())
    except Exception as err:  # noqa: BLE001 - a bug of ours must still end in words, not a trace
        log.exception("answer failed")
        outcome = view.stats.finish_reason = "error"
        await view.finish(note=user_message(err), outcome=outcome, actions=actions())
    return AnswerResult(outcome=outcome, answer=view.answer_text, reasoning=view.reasoning_text,
                        stats=view.stats.as_dict(), dropped_turns=dropped, message=view.reply,
                        verdict=view.verdict.outcome if view.verdict else None)


async def _stream(client: openai.AsyncOpenAI, settings: Settings, request: dict, view: AnswerView,
                  sampling: Sampling, stop_requested: Callable[[], bool]) -> None:
    async with contextlib.aclosing(stream_chat(client, settings, request,
                                               starts_in_reasoning=settings.reasoning_starts_inside
                                               and sampling.thinking)) as deltas:
        async for delta in deltas:
            if stop_requested():
                raise StopRequested
            await _apply(view, delta)


async def _apply(view: AnswerView, delta) -> None:
    if delta.reasoning:
        await view.add_reasoning(delta.reasoning)
    if delta.answer:
        await view.add_answer(delta.answer)
    if delta.usage:
        view.stats.completion_tokens = delta.usage.get("completion_tokens")
        view.stats.prompt_tokens = delta.usage.get("prompt_tokens")
    if delta.finish_reason:
        view.stats.finish_reason = delta.finish_reason
