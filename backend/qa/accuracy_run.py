"""Accuracy runs: ask every keyed question N times of the served model, grade and store every answer.

Each answer goes the page's way: the same request (backend/chat/sampling.py), the same streaming
client with its retries and timeouts (backend/chat/client.py), the same stamp (backend/qa/stamp.py)
and the same record, stored as soon as it ends in one chat per run (backend/qa/run_store.py). The
samples of one question are asked together (vLLM batches them), the questions one after another.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import openai

from backend.chat.answer_stats import AnswerStats
from backend.chat.client import stream_chat
from backend.chat.conversation import Conversation
from backend.chat.sampling import Sampling, request_params
from backend.errors import BackendRejected, BackendUnavailable, ChatAppError
from backend.qa.accuracy import Graded
from backend.qa.answer_key import check
from backend.qa.question_set import Question
from backend.qa.run_store import RunStore
from backend.qa.stamp import make_stamp, now_iso
from backend.records import answer_record
from backend.settings import Settings

CUT_OFF = "The answer was cut off at the token limit (--max-tokens)."


@dataclass
class Sample:
    """One answer to one question, filled in as it streams."""

    question: Question
    number: int  # 1..N, the record's `sample`
    outcome: str = "not asked"  # then in progress, complete, stopped or error
    answer: str = ""
    reasoning: str = ""
    error: str = ""
    stats: AnswerStats = field(default_factory=AnswerStats)
    request: dict = field(default_factory=dict)
    started_at: str = ""
    verdict: object = None

    def graded(self) -> Graded:
        if self.outcome != "complete":
            return Graded(self.outcome)
        if self.verdict is None:
            return Graded("not keyed")
        return Graded(self.verdict.outcome, getattr(self.verdict, "read", None))


@dataclass
class RunContext:
    client: openai.AsyncOpenAI
    settings: Settings
    sampling: Sampling
    store: RunStore
    vllm_version: str
    slots: asyncio.Semaphore
    on_done: Callable[[Sample], None]
    question_steps: dict[str, str] = field(default_factory=dict)  # question id -> its user message id
    fatal: ChatAppError | None = None  # a failure every later answer would meet too


def sampling_for(sampling: Sampling, number: int) -> Sampling:
    """A given seed makes a run repeatable, while its samples still differ: sample k gets seed + k - 1."""
    return sampling if sampling.seed is None else replace(sampling, seed=sampling.seed + number - 1)


async def ask(ctx: RunContext, sample: Sample) -> None:
    """Stream one answer into `sample`, then grade and store it, whatever happened (a stop included)."""
    async with ctx.slots:
        if ctx.fatal is not None:
            return
        sampling = sampling_for(ctx.sampling, sample.number)
        conversation = Conversation()
        conversation.add_user(sample.question.question, ctx.question_steps[sample.question.id])
        messages, _ = conversation.messages(system_prompt=sampling.system_prompt,
                                            context_tokens=ctx.settings.context_tokens,
                                            answer_tokens=sampling.max_tokens)
        sample.request = {"model": ctx.settings.resolved_served_name, "messages": messages,
                          **request_params(sampling)}
        sample.started_at, sample.outcome, sample.stats = now_iso(), "in progress", AnswerStats()
        try:
            await _stream(ctx, sample, starts_in_reasoning=ctx.settings.reasoning_starts_inside and sampling.thinking)
            sample.outcome = "complete"
        except asyncio.CancelledError:
            sample.outcome = sample.stats.finish_reason = "stopped"
            raise
        except ChatAppError as err:
            sample.outcome, sample.error, sample.stats.finish_reason = "error", str(err), "error"
            if isinstance(err, (BackendUnavailable, BackendRejected)):
                ctx.fatal = err
        finally:
            sample.stats.finish()
            if sample.outcome == "complete":
                # As on the page: a cut-off answer counts only where it stated its answer outright.
                sample.verdict = check(sample.question.question, sample.answer,
                                       cut_off=sample.stats.finish_reason == "length")
            store(ctx, sample)
            ctx.on_done(sample)


async def _stream(ctx: RunContext, sample: Sample, *, starts_in_reasoning: bool) -> None:
    async with contextlib.aclosing(stream_chat(ctx.client, ctx.settings, sample.request,
                                               starts_in_reasoning=starts_in_reasoning)) as deltas:
        async for delta in deltas:  # what answer_flow._apply does for the page
            if delta.reasoning:
                sample.stats.on_reasoning()
                sample.reasoning += delta.reasoning
            if delta.answer:
                sample.stats.on_answer()
                sample.answer += delta.answer
            if delta.usage:
                sample.stats.completion_tokens = delta.usage.get("completion_tokens")
                sample.stats.prompt_tokens = delta.usage.get("prompt_tokens")
            if delta.finish_reason:
                sample.stats.finish_reason = delta.finish_reason


def shown_text(sample: Sample, served_name: str) -> str:
    """The answer message as the page would show it: answer, notes, answer-key line, stats line."""
    notes = []
    if sample.outcome == "stopped":
        notes.append("**Stopped by you (Ctrl-C).**")
    elif sample.outcome == "error":
        notes.append(f"**{sample.error}**")
    elif sample.stats.finish_reason == "length":
        notes.append(f"**{CUT_OFF}**")
    if sample.verdict is not None:
        notes.append(sample.verdict.describe())
    parts = [sample.answer, *notes, f"*{sample.stats.summary(served_name)}*"]
    return "\n\n".join(p for p in parts if p).strip()


def store(ctx: RunContext, sample: Sample) -> None:
    """Write one finished (or stopped) answer with its stamp and record; a never-started one is skipped."""
    if sample.outcome == "not asked":
        return
    stamp = make_stamp(settings=ctx.settings, request=sample.request, vllm_version=ctx.vllm_version,
                       started_at=sample.started_at, finished_at=now_iso(), stats=sample.stats.as_dict(),
                       context_messages=len(sample.request.get("messages", [])))
    question_step = ctx.question_steps[sample.question.id]
    record = answer_record(question_id=question_step, question=sample.question.question, sample=sample.number,
                           outcome=sample.outcome, reasoning=sample.reasoning, answer=sample.answer,
                           verdict=sample.verdict, stamp=stamp)
    label = f"Thought for {max(1, round(sample.stats.thinking_seconds))} s"
    ctx.store.add_answer(question_step=question_step, question=sample.question.question,
                         shown=shown_text(sample, ctx.settings.resolved_served_name), record=record,
                         author=ctx.settings.resolved_served_name, reasoning=sample.reasoning,
                         thinking_label=label)


async def ask_all(ctx: RunContext, questions: list[Question], samples: int, results: list[list[Sample]]) -> None:
    """Every question `samples` times, into `results` as answers end (so a stop leaves what was done there)."""
    for question in questions:
        ctx.question_steps[question.id] = ctx.store.add_question(question.question)
        batch = [Sample(question, number) for number in range(1, samples + 1)]
        results.append(batch)
        await asyncio.gather(*(ask(ctx, s) for s in batch))
        if ctx.fatal is not None:
            raise ctx.fatal
