"""A chat opened while its answer still streams (a reload, a second tab, another page process).

Streaming in this process: the tab joins it (backend/page/live_answers.py). Its last question
unanswered, or its answer stored "in progress", and something of it saved lately (the question, the
thinking, the answer): another page process streams it, and the tab follows its saves in the history
until it ends. Saved too long ago: the process that streamed it is gone, so a stored part of the
answer is marked interrupted, on the page and in the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Literal

import chainlit as cl
from chainlit.data import get_data_layer
from chainlit.step import StepDict

from backend.chat.conversation import Conversation
from backend.page.chat_state import ChatState
from backend.page.live_answers import SAVED_KEY, LiveAnswers, after_resume, epoch, last_saved
from backend.records import RECORD_KEY
from backend.settings import Settings

INTERRUPTED = (
    "**This answer was interrupted: the page process that was writing it stopped. What it had "
    "written is kept above; ask again (or Regenerate) for a whole answer.**"
)


Progress = Literal["running", "stale", "done"]
CLOCK_SLACK = 5.0  # seconds a browser's clock may run ahead of ours before its times are not believed


def stale_after(settings: Settings) -> float:
    """Seconds without a save after which an in-progress answer has no process writing it."""
    return 3 * settings.persist_interval + 10


async def follow(
    thread: dict[str, Any], *, answers: LiveAnswers, settings: Settings, state: ChatState, resumed: asyncio.Event
) -> None:
    """Called when a chat opens: follow its answer in progress, if it has one. What is shown waits for
    `resumed` (set when the resume hook returns): Chainlit then sends the stored chat, which replaces
    whatever the tab had, so anything sent before it would vanish."""
    steps = thread.get("steps") or []
    live = await answers.join(thread["id"], cl.context.emitter, {s["id"] for s in steps}, resumed)
    if live is not None:
        state.stop, state.busy = live.stop, live.task  # Stop in this tab stops it; a new question waits
        return
    progress, step = _progress(steps, settings)
    if progress == "stale" and step is not None:
        await mark_interrupted(step)
    elif progress == "running":
        known = {s["id"] for s in steps}
        state.following = asyncio.create_task(_follow_saves(thread["id"], known, settings, state, resumed))


def _record(step: StepDict) -> dict[str, Any]:
    return (step.get("metadata") or {}).get(RECORD_KEY) or {}


def _last_turn(steps: list[StepDict]) -> list[StepDict]:
    """The chat's last question and every step stored after it (empty: no question)."""
    ordered = sorted(steps, key=lambda s: s.get("createdAt") or "")
    asked = [i for i, s in enumerate(ordered) if s.get("type") == "user_message"]
    return ordered[asked[-1] :] if asked else []


def _progress(steps: list[StepDict], settings: Settings) -> tuple[Progress, StepDict | None]:
    """Where the last question's answer stands, and its stored answer step if it has one.

    Until the page process that streams it makes its first save of the answer, there is only the
    question (and perhaps the thinking so far): that is "running" too while something was saved lately.
    A message without a record (a notice, Chainlit's "Task manually stopped.") does not end the turn:
    the answer may still come, or be stored stopped.
    """
    turn = _last_turn(steps)
    if not turn:
        return "done", None
    question, after = turn[0], turn[1:]
    answered = [s for s in after if _record(s).get("kind") == "answer"]
    step = answered[-1] if answered else None
    if step is not None and _record(step).get("outcome") != "in progress":
        return "done", None
    saves = [epoch(question.get("createdAt"))] + [
        last_saved(_record(s)) or (s.get("metadata") or {}).get(SAVED_KEY) for s in after
    ]
    now = time.time()
    # The question's time is the browser's clock: one running ahead must not keep a dead answer "running".
    latest = max((t for t in saves if t is not None and t <= now + CLOCK_SLACK), default=None)
    if latest is None or now - latest > stale_after(settings):
        return "stale", step  # the process that streamed it is gone
    return "running", step


async def mark_interrupted(step: StepDict) -> None:
    """The stored part stays, marked interrupted in its record and in words under it."""
    record = step["metadata"][RECORD_KEY]
    record["outcome"] = "interrupted"
    step["output"] = f"{step.get('output') or ''}\n\n{INTERRUPTED}".lstrip()
    if (store := get_data_layer()) is not None:
        await store.update_step(step)
    await cl.context.emitter.update_step(step)


async def _follow_saves(
    thread_id: str, known: set[str], settings: Settings, state: ChatState, resumed: asyncio.Event
) -> None:
    """Another process streams it: show each save it makes until the answer ends or its saves stop."""
    emitter, store = cl.context.emitter, get_data_layer()
    if store is None:
        return
    await after_resume(resumed)
    await emitter.task_start()
    try:
        while True:
            await asyncio.sleep(settings.persist_interval)
            thread = await store.get_thread(thread_id)
            if thread is None:
                return
            steps = thread.get("steps") or []
            for step in _last_turn(steps)[1:]:
                if step["id"] in known:
                    await emitter.update_step(step)
                else:
                    await emitter.send_step(step)
                    known.add(step["id"])
            progress, answer = _progress(steps, settings)
            if progress != "running":
                if progress == "stale" and answer is not None:
                    await mark_interrupted(answer)
                state.conversation = Conversation.from_steps(steps)  # a question asked next sees this answer
                return
    finally:
        with contextlib.suppress(Exception):
            await emitter.task_end()
