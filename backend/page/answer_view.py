"""One answer on the page: reasoning in a collapsible step, the answer streamed, stats under it.

Streaming content arrives through `add_reasoning` / `add_answer`; `finish` closes the step, writes
the stats line and the answer-key line, and stores the answer with its record (see backend/records.py).
What has streamed is stored every few seconds, so a crash of the app loses at most that.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import chainlit as cl
from chainlit.data import get_data_layer
from chainlit.utils import utc_now

from backend.chat.answer_stats import AnswerStats
from backend.page.token_batcher import TokenBatcher
from backend.qa.answer_key import Verdict
from backend.qa.answer_key import check as check_answer
from backend.qa.stamp import make_stamp, now_iso
from backend.records import answer_record
from backend.settings import Settings


@dataclass
class AnswerView:
    """The page elements of one answer, created as content for them arrives."""

    settings: Settings
    question: str = ""
    question_id: str = ""
    sample: int = 1  # 2, 3, ... for Regenerate
    request: dict[str, Any] = field(default_factory=dict)
    engine: dict[str, Any] = field(default_factory=dict)  # backend/qa/engine.py
    seed_source: str | None = None  # "user" or "drawn"
    stats: AnswerStats = field(default_factory=AnswerStats)
    started_at: str = field(default_factory=now_iso)
    verdict: Verdict | None = None
    step: cl.Step | None = None
    thinking_step_id: str = ""
    reply: cl.Message | None = None
    thinking: TokenBatcher | None = None
    answer: TokenBatcher | None = None
    saved_at: float = field(default_factory=time.monotonic)
    saving: asyncio.Task | None = None  # the partial save in flight, if any

    def _ensure_reply(self) -> cl.Message:
        """The answer message, created when answer text (or the end) arrives: after the thinking step."""
        if self.reply is None:
            # Dated now: Chainlit dates a streamed message only at its final send, so partial saves
            # stored it undated and exports listed an answer still streaming before the earlier ones.
            self.reply = cl.Message(content="", created_at=utc_now())
        return self.reply

    async def add_reasoning(self, text: str) -> None:
        if self.thinking is None:
            # Same parent as the answer (Chainlit's on_message run step), so it renders above it.
            run = cl.context.current_step
            self.step = cl.Step(name="Thinking…", type="llm", parent_id=run.id if run else None,
                                show_input=False, default_open=True)
            await self.step.send()
            self.thinking_step_id = self.step.id
            self.thinking = TokenBatcher(self.step, self.settings.ui_flush_interval)
        self.stats.on_reasoning()
        await self.thinking.add(text)
        await self._save_partial()

    async def add_answer(self, text: str) -> None:
        if self.answer is None:
            if self.thinking:
                await self._close_step()
            self.answer = TokenBatcher(self._ensure_reply(), self.settings.ui_flush_interval)
        self.stats.on_answer()
        await self.answer.add(text)
        await self._save_partial()

    def record(self, outcome: str) -> dict[str, Any]:
        """What is stored with the answer (message metadata), and exported: see backend/qa/export.py."""
        stamp = make_stamp(settings=self.settings, request=self.request, engine=self.engine,
                           seed_source=self.seed_source, started_at=self.started_at, finished_at=now_iso(),
                           stats=self.stats.as_dict(), context_messages=len(self.request.get("messages", [])))
        return answer_record(question_id=self.question_id, question=self.question, sample=self.sample,
                             outcome=outcome, thinking_step_id=self.thinking_step_id, reasoning=self.reasoning_text,
                             answer=self.answer_text, verdict=self.verdict, stamp=stamp)

    async def _save_partial(self) -> None:
        """Every few seconds, store what has streamed so far: a crash of the app loses at most that.

        The write runs beside the stream, not in its path (one at a time per answer): a database
        write can wait on the file lock while other sessions write, and tokens must not wait for it.
        """
        if time.monotonic() - self.saved_at < self.settings.persist_interval:
            return
        if self.saving is not None and not self.saving.done():
            return
        self.saved_at = time.monotonic()
        self.saving = asyncio.create_task(self._store_partial())

    async def _settle(self) -> None:
        """Wait for a partial save in flight: landing after a later write, it would undo that one."""
        if self.saving is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.saving)

    async def _store_partial(self) -> None:
        store = get_data_layer()
        if store is None:
            return
        if self.step is not None:
            await store.update_step(self.step.to_dict())
        if self.reply is not None:
            self.reply.metadata = self.record("in progress")
            await store.update_step(self.reply.to_dict())

    @property
    def answer_text(self) -> str:
        return self.answer.text if self.answer else ""

    @property
    def reasoning_text(self) -> str:
        return self.thinking.text if self.thinking else ""

    async def _close_step(self, label: str | None = None) -> None:
        if self.step is None or self.thinking is None:
            return
        await self._settle()
        await self.thinking.flush()
        self.step.name = label or f"Thought for {max(1, round(self.stats.thinking_seconds))} s"
        self.step.output = self.thinking.text
        await self.step.update()
        self.step = None  # closed: later calls are no-ops

    async def finish(self, *, note: str = "", outcome: str = "complete", actions: list | None = None) -> None:
        """Close the step, flush the answer, write the stats line (and any note) under it, and store it."""
        self.stats.finish()
        await self._settle()
        cut_thinking = self.stats.finish_reason == "length" and not self.answer_text.strip()
        if self.thinking is not None:
            label = None
            if cut_thinking:
                label = f"Thinking cut off by the token limit after {self.stats.thinking_seconds:.0f} s"
            elif note:
                label = f"Thinking interrupted after {self.stats.thinking_seconds:.0f} s"
            await self._close_step(label)
        if cut_thinking and not note:
            note = ("The model used its whole token budget thinking and gave no final answer. "
                    "Raise *Max tokens* in the settings panel and ask again.")
        elif self.stats.finish_reason == "length":
            note = note or "The answer was cut off at the token limit (*Max tokens* in the settings panel)."
        reply = self._ensure_reply()
        if self.answer:
            await self.answer.flush()
        extra = f"\n\n**{note}**" if note else ""
        if outcome == "complete" and self.stats.finish_reason in ("stop", "length"):
            # A cut-off answer is graded too: only an answer it stated outright counts then (else unclear).
            self.verdict = check_answer(self.question, self.answer_text, cut_off=self.stats.finish_reason == "length")
            extra += f"\n\n{self.verdict.describe()}" if self.verdict else ""
        reply.content = f"{self.answer_text}{extra}\n\n*{self.stats.summary(self.settings.resolved_served_name)}*".lstrip()
        reply.metadata = self.record(outcome)
        reply.actions = actions or []
        await reply.send()  # after streaming, send() is what finalizes the message on the page
        if (store := get_data_layer()) is not None:
            # send() stores in a background task; store here too, so an export right after has it.
            await store.update_step(reply.to_dict())
