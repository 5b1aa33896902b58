"""Answering one question on the page: wait for the server, then the one answer path, rendered.

A stop (the task cancelled, or the session's stop flag) or an error keeps what was already streamed
and marks it (backend/answers/stream.py); no exception text reaches the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import chainlit as cl
import openai

from backend.answers.request import new_request
from backend.answers.stream import stream_answer
from backend.chat.conversation import Conversation
from backend.chat.sampling import Sampling
from backend.engine.facts import engine_facts
from backend.page.answer_view import AnswerView
from backend.page.live_answers import LiveAnswer
from backend.page.notices import notice, wait_for_backend
from backend.page.services import PageServices
from backend.page.token_batcher import StreamCounter
from backend.settings import Settings, page_replica


@dataclass(frozen=True)
class PageAnswer:
    """What app.py keeps of an answer: its text for the conversation, its message for the buttons."""

    text: str = ""
    message: cl.Message | None = None


async def answer(
    *,
    client: openai.AsyncOpenAI,
    settings: Settings,
    conversation: Conversation,
    sampling: Sampling,
    stop_requested: Callable[[], bool] = lambda: False,
    sample: int = 1,
    actions: Callable[[], list] = list,
    session_id: str | None = None,
    shown: LiveAnswer | None = None,
    services: PageServices | None = None,
) -> PageAnswer:
    """Stream one answer to the last question; store it with its stamp; return what happened."""
    if not await wait_for_backend(settings, health=services.health if services else None):
        return PageAnswer()
    messages, dropped = conversation.messages(
        system_prompt=sampling.system_prompt, context_tokens=settings.context_tokens, answer_tokens=sampling.max_tokens
    )
    if dropped:
        await notice(
            f"The conversation is longer than the model's context, so the {dropped} oldest "
            "message(s) were left out of what the model sees."
        )
    question = conversation.turns[-1] if conversation.turns else None
    asked = {"question": question.content, "question_id": question.message_id} if question else {}
    engine = await engine_facts(settings, services.facts if services else None)
    request = new_request(settings, sampling, messages, engine=engine, sample=sample, session_id=session_id, **asked)
    streams = services.streams if services else StreamCounter()
    # Only beside other page processes can a tab elsewhere press Stop (one read per save, so not for one).
    view = AnswerView(settings, shown=shown, streams=streams, thread_id=session_id if page_replica() else None)
    with streams.streaming():
        stop = lambda: stop_requested() or view.stopped_elsewhere  # noqa: E731 - read after every piece
        result = await stream_answer(client, settings, request, observer=view, stop=stop)
    await view.finish(result, actions=actions())
    return PageAnswer(text=result.answer, message=view.reply)
