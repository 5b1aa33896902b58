"""One answer on the page: reasoning in a collapsible step, the answer streamed, stats under it.

It observes the one answer path (backend/answers/stream.py): text arrives through `on_reasoning` /
`on_answer`; `finish` closes the step, writes the note, the answer-key line and the stats line,
and stores the answer with its record. What has streamed is stored every few seconds, so a crash of
the app loses at most that.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

import chainlit as cl
from chainlit.data import get_data_layer
from chainlit.utils import utc_now

from backend.answers.outcome import PANEL_LIMIT, AnswerOutcome, thought_for
from backend.answers.stream import LiveAnswer
from backend.page import live_answers, remote_stop
from backend.page.token_batcher import StreamCounter, TokenBatcher
from backend.settings import Settings


@dataclass
class AnswerView:
    """The page elements of one answer, created as content for them arrives."""

    settings: Settings
    live: LiveAnswer | None = None
    shown: live_answers.LiveAnswer | None = None  # other tabs following this answer (reloaded, second)
    streams: StreamCounter | None = None  # answers streaming in this process: paces the updates
    step: cl.Step | None = None
    thinking_step_id: str = ""
    reply: cl.Message | None = None
    thinking: TokenBatcher | None = None
    answer: TokenBatcher | None = None
    saved_at: float = field(default_factory=time.monotonic)
    saving: asyncio.Task | None = None  # the partial save in flight, if any
    thread_id: str | None = None  # its chat: where a tab on another process asks it to stop
    started: float = field(default_factory=time.time)
    stopped_elsewhere: bool = False  # Stop pressed in a tab on another page process (remote_stop.py)

    def _ensure_reply(self) -> cl.Message:
        """The answer message, created when answer text (or the end) arrives: after the thinking step."""
        if self.reply is None:
            # Dated now: Chainlit dates a streamed message only at its final send, and a partial save
            # without a date would list an answer still streaming before the earlier ones in exports.
            self.reply = cl.Message(content="", created_at=utc_now())
        return self.reply

    async def on_reasoning(self, text: str, live: LiveAnswer) -> None:
        self.live = live
        if self.thinking is None:
            # Same parent as the answer (Chainlit's on_message run step), so it renders above it.
            run = cl.context.current_step
            self.step = cl.Step(
                name="Thinking…", type="llm", parent_id=run.id if run else None, show_input=False, default_open=True
            )
            await self.step.send()
            self.thinking_step_id = self.step.id
            self.thinking = TokenBatcher(self.step, self.settings.ui_flush_interval, self.streams)
        await self.thinking.add(text)
        await self._save_partial()
        if self.shown is not None and self.step is not None:
            await self.shown.show(self.step)

    async def on_answer(self, text: str, live: LiveAnswer) -> None:
        self.live = live
        if self.answer is None:
            if self.thinking:
                await self._close_step(thought_for(live.stats.thinking_seconds))
            self.answer = TokenBatcher(self._ensure_reply(), self.settings.ui_flush_interval, self.streams)
        await self.answer.add(text)
        await self._save_partial()
        if self.shown is not None and self.reply is not None:
            await self.shown.show(self.reply)

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
        if store is None or self.live is None:
            return
        if self.step is not None:
            # Before the answer's first words only this step is stored: its time tells a tab on another
            # page process that the answer still runs (backend/page/follow.py).
            self.step.metadata = {**(self.step.metadata or {}), live_answers.SAVED_KEY: time.time()}
            await store.update_step(self.step.to_dict())
        if self.reply is not None:
            self.reply.metadata = self.live.record_in_progress(thinking_step_id=self.thinking_step_id)
            await store.update_step(self.reply.to_dict())
        if self.thread_id is not None and await remote_stop.stop_asked_since(self.thread_id, self.started):
            self.stopped_elsewhere = True

    async def _close_step(self, label: str) -> None:
        if self.step is None or self.thinking is None:
            return
        await self._settle()
        await self.thinking.flush()
        self.step.name = label
        self.step.output = self.thinking.text
        await self.step.update()
        if self.shown is not None:
            await self.shown.show(self.step, now=True)
        self.step = None  # closed: later calls are no-ops

    async def finish(self, result: AnswerOutcome, *, actions: list | None = None) -> None:
        """Close the step, flush the answer, write the note, grade and stats under it, and store it."""
        await self._settle()
        await self._close_step(result.thinking_label())
        reply = self._ensure_reply()
        if self.answer:
            await self.answer.flush()
        note = result.note(limit_setting=PANEL_LIMIT)
        extra = f"\n\n**{note}**" if note else ""
        extra += f"\n\n{result.grade.describe()}" if result.grade else ""
        summary = result.stats.summary(self.settings.resolved_served_name)
        reply.content = f"{result.answer}{extra}\n\n*{summary}*".lstrip()
        reply.metadata = result.record(thinking_step_id=self.thinking_step_id)
        reply.actions = actions or []
        await reply.send()  # after streaming, send() is what finalizes the message on the page
        if self.shown is not None:
            await self.shown.show(reply, now=True)
        if (store := get_data_layer()) is not None:
            # send() stores in a background task; store here too, so an export right after has it.
            await store.update_step(reply.to_dict())
