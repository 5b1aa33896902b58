"""One answer on the page: reasoning in a collapsible step, the answer streamed, stats under it.

This is the only backend module that touches Chainlit objects; app.py calls `answer()` from its hook.
Tokens are batched into UI updates (`TokenBatcher`) because Chainlit sends one socket event per
`stream_token` and falls behind on fast streams (Chainlit#2604). A stop (CancelledError) or an error
keeps what was already streamed and marks it; no exception text reaches the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import chainlit as cl
import openai
from chainlit.data import get_data_layer

from backend.answer_key import Verdict
from backend.answer_key import check as check_answer
from backend.answer_stats import AnswerStats
from backend.backend_state import describe_down, is_healthy, wait_until_healthy
from backend.chat_client import stream_chat
from backend.conversation import Conversation
from backend.export import RECORD_KEY, load_records, render
from backend.history_db import HistoryUnavailable
from backend.errors import BackendUnavailable, ChatAppError, user_message
from backend.sampling import Sampling, request_params
from backend.settings import Settings
from backend.stamp import make_stamp, now_iso, server_version

log = logging.getLogger(__name__)
NOTICE = "Notice"
NOTICE_MARK = "ℹ️ "  # notices (not answers) start with this, on the page and in tests


def as_notice(text: str) -> str:
    return NOTICE_MARK + text


class TokenBatcher:
    """Collects tokens and streams them to a message or step at most every `interval` seconds."""

    def __init__(self, target: cl.Message | cl.Step, interval: float) -> None:
        self.target, self.interval = target, interval
        self.buffer, self.last_flush, self.text = "", 0.0, ""

    async def add(self, token: str) -> None:
        self.buffer += token
        self.text += token
        if time.monotonic() - self.last_flush >= self.interval:  # the first token goes out at once
            await self.flush()

    async def flush(self) -> None:
        if self.buffer:
            await self.target.stream_token(self.buffer)
            self.buffer = ""
        self.last_flush = time.monotonic()


@dataclass
class AnswerView:
    """The page elements of one answer, created as content for them arrives."""

    settings: Settings
    question: str = ""
    question_id: str = ""
    sample: int = 1  # 2, 3, ... for Regenerate
    request: dict[str, Any] = field(default_factory=dict)
    vllm_version: str = "unknown"
    stats: AnswerStats = field(default_factory=AnswerStats)
    started_at: str = field(default_factory=now_iso)
    verdict: Verdict | None = None
    step: cl.Step | None = None
    thinking_step_id: str = ""
    reply: cl.Message | None = None
    thinking: TokenBatcher | None = None
    answer: TokenBatcher | None = None
    saved_at: float = field(default_factory=time.monotonic)

    def _ensure_reply(self) -> cl.Message:
        """The answer message, created when answer text (or the end) arrives: after the thinking step."""
        if self.reply is None:
            self.reply = cl.Message(content="")
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
        """What is stored with the answer (message metadata), and exported: see backend/export.py."""
        stamp = make_stamp(settings=self.settings, request=self.request, vllm_version=self.vllm_version,
                           started_at=self.started_at, finished_at=now_iso(), stats=self.stats.as_dict(),
                           context_messages=len(self.request.get("messages", [])))
        return {RECORD_KEY: {"kind": "answer", "question_id": self.question_id, "question": self.question,
                             "sample": self.sample, "outcome": outcome, "thinking_step_id": self.thinking_step_id,
                             "reasoning": self.reasoning_text, "answer": self.answer_text,
                             "verdict": None if self.verdict is None else asdict(self.verdict), "stamp": stamp}}

    async def _save_partial(self) -> None:
        """Every few seconds, store what has streamed so far: a crash of the app loses at most that."""
        if time.monotonic() - self.saved_at < self.settings.persist_interval:
            return
        self.saved_at = time.monotonic()
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
        await self.thinking.flush()
        self.step.name = label or f"Thought for {max(1, round(self.stats.thinking_seconds))} s"
        self.step.output = self.thinking.text
        await self.step.update()
        self.step = None  # closed: later calls are no-ops

    async def finish(self, *, note: str = "", outcome: str = "complete", actions: list | None = None) -> None:
        """Close the step, flush the answer, write the stats line (and any note) under it, and store it."""
        self.stats.finish()
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
        if not note and self.stats.finish_reason == "stop":
            self.verdict = check_answer(self.question, self.answer_text)
            extra += f"\n\n{self.verdict.describe()}" if self.verdict else ""
        reply.content = f"{self.answer_text}{extra}\n\n*{self.stats.summary(self.settings.resolved_served_name)}*".lstrip()
        reply.metadata = self.record(outcome)
        reply.actions = actions or []
        await reply.send()  # after streaming, send() is what finalizes the message on the page
        if (store := get_data_layer()) is not None:
            # send() stores in a background task; store here too, so an export right after has it.
            await store.update_step(reply.to_dict())


def guarded(hook):
    """A hook that never shows a stack trace: a bug of ours is logged and told in one sentence."""
    @functools.wraps(hook)
    async def wrapper(*args, **kwargs):
        try:
            return await hook(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the page must get words, the log the trace
            log.exception("%s failed", hook.__name__)
            await notice(user_message(err))
    return wrapper


def answer_actions(sample: int) -> list[cl.Action]:
    return [cl.Action(name="regenerate", payload={"sample": sample}, label="Regenerate", icon="refresh-cw",
                      tooltip="Sample this answer again; this one stays"),
            cl.Action(name="export", payload={}, label="Export chat", icon="download",
                      tooltip="Download this chat as JSONL and Markdown, with a reproducibility stamp per answer")]


async def send_export(settings: Settings, *, thread_id: str, history_off_reason: str) -> None:
    """This chat's stored answers as two downloadable files."""
    if history_off_reason:
        await notice(f"{history_off_reason} So there is nothing stored to export.")
        return
    try:
        records = await asyncio.to_thread(load_records, settings.history_path, thread_id=thread_id)
    except (HistoryUnavailable, sqlite3.Error) as err:
        await notice(f"Could not read the history database to export this chat: {err}")
        return
    if not records:
        await notice("Nothing of this chat is stored yet: ask a question first, then export.")
        return
    files = [cl.File(name=f"chat-{thread_id[:8]}.{fmt}", content=render(records, fmt).encode(), display="inline",
                     mime="application/jsonl" if fmt == "jsonl" else "text/markdown") for fmt in ("jsonl", "md")]
    await cl.Message(content=as_notice(f"Export of this chat: {len(records)} answer(s), each with its "
                                       "reproducibility stamp. Download below."), author=NOTICE, elements=files).send()


async def notice(text: str) -> None:
    await cl.Message(content=as_notice(text), author=NOTICE).send()


async def wait_for_backend(settings: Settings) -> bool:
    """If the server is down, say so in one message kept up to date, and wait for it to come back."""
    if await is_healthy(settings):
        return True
    status = cl.Message(content=as_notice(describe_down(settings)), author=NOTICE)
    await status.send()

    async def show(text: str) -> None:
        if status.content != as_notice(text):
            status.content = as_notice(text)
            await status.update()

    ok = await wait_until_healthy(settings, on_wait=show, timeout=settings.startup_timeout)
    status.content = as_notice("The model server is ready again; answering now." if ok else
                               describe_down(settings) + " Your message is kept: send it again later.")
    await status.update()
    return ok


class StopRequested(Exception):
    """The user pressed Stop (seen through the session flag, in case the task's cancel was lost)."""


async def answer(*, client: openai.AsyncOpenAI, settings: Settings, conversation: Conversation,
                 sampling: Sampling, stop_requested: Callable[[], bool] = lambda: False, sample: int = 1,
                 actions: Callable[[], list] = list) -> dict[str, Any]:
    """Stream one answer to the last question; store it with its stamp; return what happened."""
    if not await wait_for_backend(settings):
        return {"outcome": "backend down", "answer": "", "reasoning": ""}
    messages, dropped = conversation.messages(system_prompt=sampling.system_prompt,
                                              context_tokens=settings.context_tokens,
                                              answer_tokens=sampling.max_tokens)
    if dropped:
        await notice(f"The conversation is longer than the model's context, so the {dropped} oldest "
                     "message(s) were left out of what the model sees.")
    question = conversation.turns[-1] if conversation.turns else None
    request = {"model": settings.resolved_served_name, "messages": messages, **request_params(sampling)}
    view = AnswerView(settings, question=question.content if question else "",
                      question_id=question.message_id if question else "", sample=sample, request=request,
                      vllm_version=await server_version(settings))
    try:
        async with contextlib.aclosing(stream_chat(client, settings, request,
                                                   starts_in_reasoning=settings.reasoning_starts_inside
                                                   and sampling.thinking)) as deltas:
            async for delta in deltas:
                if stop_requested():
                    raise StopRequested
                await _apply(view, delta)
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
    return {"outcome": outcome, "answer": view.answer_text, "reasoning": view.reasoning_text,
            "stats": view.stats.as_dict(), "dropped_turns": dropped, "message": view.reply,
            "verdict": view.verdict.correct if view.verdict else None}


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


def settings_widgets(sampling: Sampling, max_tokens: int) -> list:
    """The settings panel, filled with this chat's current values."""
    from chainlit.input_widget import NumberInput, Slider, Switch, TextInput

    return [
        TextInput(id="system_prompt", label="System prompt", initial=sampling.system_prompt, multiline=True,
                  placeholder="Empty: the model's own default"),
        Slider(id="temperature", label="Temperature", initial=sampling.temperature, min=0, max=2, step=0.05),
        Slider(id="top_p", label="Top-p", initial=sampling.top_p, min=0.05, max=1, step=0.05),
        NumberInput(id="max_tokens", label=f"Max tokens (1-{max_tokens})", initial=sampling.max_tokens),
        Switch(id="thinking", label="Thinking (reasoning models)", initial=sampling.thinking),
        TextInput(id="seed", label="Seed (empty = random)", initial="" if sampling.seed is None else str(sampling.seed)),
    ]


def input_problem(text: str, settings: Settings, sampling: Sampling) -> str | None:
    """Why a user message can't be sent as it is, in words; None if it can."""
    if not text.strip():
        return "Your message is empty: type a question, or pick one of the examples."
    if len(text) > settings.max_message_chars:
        return (f"Your message is {len(text):,} characters long; the limit is {settings.max_message_chars:,} "
                "(RCHAT_MAX_MESSAGE_CHARS). Please shorten it.")
    if not Conversation().fits(text, context_tokens=settings.context_tokens, answer_tokens=sampling.max_tokens):
        return (f"Your message is too long for the model's context ({settings.context_tokens} tokens, "
                f"{sampling.max_tokens} of them kept for the answer). Shorten it or lower *Max tokens*.")
    return None
