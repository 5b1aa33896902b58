"""Accuracy runs: ask every keyed question N times of the served model, grade and store every answer.

Each answer goes the one answer path (backend/answers/stream.py), as on the page: the same request
(seed guard included), streaming, grading rule, stamp and record, stored as soon as it ends in one
chat per run (backend/qa/run_store.py). The samples of one question are asked together (vLLM
batches them), the questions one after another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import openai

from backend.answers.grading.question_set import Question
from backend.answers.outcome import AnswerOutcome
from backend.answers.request import AnswerRequest, new_request
from backend.answers.stream import stream_answer
from backend.chat.answer_stats import AnswerStats
from backend.chat.conversation import Conversation
from backend.chat.sampling import Sampling
from backend.qa.accuracy import Graded, QuestionAccuracy
from backend.qa.run_store import RunStore
from backend.settings import Settings

LIMIT_SETTING = "--max-tokens"
STOPPED_NOTE = "Stopped by you (Ctrl-C)."


@dataclass
class Sample:
    """One answer to one question: not asked yet, or how it ended."""

    question: Question
    number: int  # 1..N, the record's `sample`
    result: AnswerOutcome | None = None

    @property
    def outcome(self) -> str:
        return self.result.outcome if self.result else "not asked"

    @property
    def stats(self) -> AnswerStats:
        return self.result.stats if self.result else AnswerStats()

    @property
    def error(self) -> str:
        return self.result.error if self.result else ""

    def graded(self) -> Graded:
        if self.result is None or self.result.outcome != "complete":
            return Graded("error" if self.outcome == "interrupted" else self.outcome)
        if self.result.grade is None:
            return Graded("not keyed")
        return Graded(self.result.grade.outcome, self.result.grade.read)


@dataclass
class RunContext:
    client: openai.AsyncOpenAI
    settings: Settings
    sampling: Sampling
    store: RunStore
    engine: dict[str, Any]  # backend/engine/facts.py: every answer's stamp and seed guard
    slots: asyncio.Semaphore
    on_done: Callable[[Sample], None]
    question_steps: dict[str, str] = field(default_factory=dict)  # question id -> its user message id
    fatal: Exception | None = None  # a failure every later answer would meet too

    @property
    def vllm_version(self) -> str:
        return str(self.engine.get("vllm_version", "unknown"))


def sampling_for(sampling: Sampling, number: int) -> Sampling:
    """A given seed makes a run repeatable, while its samples still differ: sample k gets seed + k - 1."""
    return sampling if sampling.seed is None else replace(sampling, seed=sampling.seed + number - 1)


def request_for(ctx: RunContext, sample: Sample) -> AnswerRequest:
    """The page's request for this question and sample (a one-question conversation)."""
    sampling = sampling_for(ctx.sampling, sample.number)
    question_step = ctx.question_steps[sample.question.id]
    conversation = Conversation()
    conversation.add_user(sample.question.question, question_step)
    messages, _ = conversation.messages(
        system_prompt=sampling.system_prompt,
        context_tokens=ctx.settings.context_tokens,
        answer_tokens=sampling.max_tokens,
    )
    return new_request(
        ctx.settings,
        sampling,
        messages,
        engine=ctx.engine,
        question=sample.question.question,
        question_id=question_step,
        sample=sample.number,
        session_id=ctx.store.thread_id,
    )


async def ask(ctx: RunContext, sample: Sample) -> None:
    """Answer, grade and store one sample, whatever happened; a stop (Ctrl-C) is stored, then goes on."""
    async with ctx.slots:
        if ctx.fatal is not None:
            return
        sample.result = result = await stream_answer(ctx.client, ctx.settings, request_for(ctx, sample))
        if result.fatal:
            ctx.fatal = result.failure
        store(ctx, result)
        ctx.on_done(sample)
        if result.outcome == "stopped":
            raise asyncio.CancelledError  # only Ctrl-C stops a run: the run stops too


def shown_text(result: AnswerOutcome, served_name: str) -> str:
    """The answer message as the page would show it: answer, note, answer-key line, stats line."""
    note = result.note(limit_setting=LIMIT_SETTING, stopped=STOPPED_NOTE)
    parts = [
        result.answer,
        f"**{note}**" if note else "",
        result.grade.describe() if result.grade else "",
        f"*{result.stats.summary(served_name)}*",
    ]
    return "\n\n".join(p for p in parts if p).strip()


def store(ctx: RunContext, result: AnswerOutcome) -> None:
    """Write one finished (or stopped) answer with its stamp and record."""
    served = ctx.settings.resolved_served_name
    ctx.store.add_answer(
        question_step=result.request.question_id,
        question=result.request.question,
        shown=shown_text(result, served),
        record=result.record(),
        author=served,
        reasoning=result.reasoning,
        thinking_label=result.thinking_label(),
    )


async def ask_all(ctx: RunContext, questions: list[Question], samples: int, results: list[list[Sample]]) -> None:
    """Every question `samples` times, into `results` as answers end (so a stop leaves what was done there)."""
    for question in questions:
        ctx.question_steps[question.id] = ctx.store.add_question(question.question)
        batch = [Sample(question, number) for number in range(1, samples + 1)]
        results.append(batch)
        await asyncio.gather(*(ask(ctx, s) for s in batch))
        if ctx.fatal is not None:
            raise ctx.fatal


def progress_printer(total: int) -> Callable[[Sample], None]:
    done = 0

    def on_done(sample: Sample) -> None:
        nonlocal done
        done += 1
        graded = sample.graded()
        read = f" (read {graded.read!r})" if graded.read is not None else ""
        extra = f": {sample.error}" if sample.error else ""
        print(
            f"[{done:>4}/{total}] {sample.question.id} #{sample.number}: {graded.outcome}{read}{extra} · "
            f"{sample.stats.answer_tokens} tokens · {sample.stats.finish_reason or 'none'}",
            flush=True,
        )

    return on_done


def accuracies(batches: list[list[Sample]]) -> list[QuestionAccuracy]:
    out = []
    for batch in batches:
        asked = [s for s in batch if s.outcome != "not asked"]
        if asked:
            out.append(QuestionAccuracy(batch[0].question.id, batch[0].question.expected, [s.graded() for s in asked]))
    return out
