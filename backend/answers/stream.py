"""The one answer path: stream an answer to an observer, end in an `AnswerOutcome` whatever happens.

The page, accuracy runs, replay and compare all call `stream_answer`. It takes the request, an
observer for live updates (the page renders them; a command line keeps none) and a stop signal.
A stop (the signal, or cancelling the task) and every failure end in an outcome, never in an
exception: what streamed so far is kept, worded, graded where it completed, and stamped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai

from backend.answers.outcome import AnswerOutcome, Outcome, grade_answer
from backend.answers.request import AnswerRequest
from backend.answers.stamp import make_stamp, now_iso
from backend.chat.answer_stats import AnswerStats
from backend.chat.client import Delta, stream_chat
from backend.errors import BackendUnavailable, ChatAppError, user_message
from backend.records import answer_record
from backend.settings import Settings

log = logging.getLogger(__name__)


class AnswerObserver(Protocol):
    """Receives an answer's text as it streams (the page's view; None for a command line)."""

    async def on_reasoning(self, text: str, live: LiveAnswer) -> None: ...

    async def on_answer(self, text: str, live: LiveAnswer) -> None: ...


class StopRequested(Exception):
    """The stop signal was seen between two reads (in case a task's cancel was lost)."""


@dataclass
class LiveAnswer:
    """One answer while it streams: what observers may read (and store as "in progress")."""

    request: AnswerRequest
    settings: Settings
    stats: AnswerStats = field(default_factory=AnswerStats)
    answer: str = ""
    reasoning: str = ""
    started_at: str = field(default_factory=now_iso)

    def stamp(self) -> dict[str, Any]:
        return make_stamp(
            settings=self.settings,
            request=self.request.body,
            engine=self.request.engine,
            seed_source=self.request.seed_source,
            started_at=self.started_at,
            finished_at=now_iso(),
            stats=self.stats.as_dict(),
            context_messages=len(self.request.messages),
        )

    def record_in_progress(self, *, thinking_step_id: str = "") -> dict[str, Any]:
        """What is stored while it streams: the record so far, outcome "in progress", not graded."""
        request = self.request
        return answer_record(
            question_id=request.question_id,
            question=request.question,
            sample=request.sample,
            outcome="in progress",
            reasoning=self.reasoning,
            answer=self.answer,
            grade=None,
            stamp=self.stamp(),
            thinking_step_id=thinking_step_id,
        )

    def ended(self, outcome: Outcome, error: Exception | None = None) -> AnswerOutcome:
        self.stats.finish()
        grade = grade_answer(
            self.request.question, self.answer, outcome=outcome, finish_reason=self.stats.finish_reason
        )
        worded = "" if error is None else str(error) if isinstance(error, ChatAppError) else user_message(error)
        return AnswerOutcome(
            outcome=outcome,
            request=self.request,
            answer=self.answer,
            reasoning=self.reasoning,
            stats=self.stats,
            stamp=self.stamp(),
            grade=grade,
            error=worded,
            failure=error,
        )


async def stream_answer(
    client: openai.AsyncOpenAI,
    settings: Settings,
    request: AnswerRequest,
    *,
    observer: AnswerObserver | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> AnswerOutcome:
    """Stream one answer to `observer` and return how it ended (see the module docstring)."""
    live = LiveAnswer(request, settings)
    try:
        await _pump(client, live, observer, stop)
    except (asyncio.CancelledError, StopRequested):
        live.stats.finish_reason = "stopped"
        return live.ended("stopped")
    except ChatAppError as err:
        live.stats.finish_reason = "error"
        return live.ended("interrupted" if isinstance(err, BackendUnavailable) else "error", err)
    except Exception as err:  # a bug of ours must still end in words, not a trace
        log.exception("answer failed")
        live.stats.finish_reason = "error"
        return live.ended("error", err)
    return live.ended("complete")


async def _pump(
    client: openai.AsyncOpenAI, live: LiveAnswer, observer: AnswerObserver | None, stop: Callable[[], bool]
) -> None:
    deltas = stream_chat(client, live.settings, live.request.body, starts_in_reasoning=live.request.starts_in_reasoning)
    async with contextlib.aclosing(deltas):
        async for delta in deltas:
            if stop():
                raise StopRequested
            await _apply(live, delta, observer)


async def _apply(live: LiveAnswer, delta: Delta, observer: AnswerObserver | None) -> None:
    if delta.reasoning:
        live.stats.on_reasoning()
        live.reasoning += delta.reasoning
        if observer is not None:
            await observer.on_reasoning(delta.reasoning, live)
    if delta.answer:
        live.stats.on_answer()
        live.answer += delta.answer
        if observer is not None:
            await observer.on_answer(delta.answer, live)
    if delta.usage:
        live.stats.completion_tokens = delta.usage.get("completion_tokens")
        live.stats.prompt_tokens = delta.usage.get("prompt_tokens")
        live.stats.server_reasoning_tokens = delta.usage.get("reasoning_tokens")
    if delta.finish_reason:
        live.stats.finish_reason = delta.finish_reason
