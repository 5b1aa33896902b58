"""A chat opened while its answer still streams (a reload, a second tab, another page process).

Streaming in this process: the tab joins it (backend/page/live_answers.py). Stored "in progress"
and saved lately: another page process streams it, and the tab follows its saves in the history
until it ends. Saved too long ago: the process that streamed it is gone, so the stored part is
marked interrupted, on the page and in the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import chainlit as cl
from chainlit.data import get_data_layer
from chainlit.step import StepDict

from backend.page.chat_state import ChatState
from backend.page.live_answers import AFTER_RESUME, LiveAnswers, last_saved
from backend.records import RECORD_KEY
from backend.settings import Settings

INTERRUPTED = (
    "**This answer was interrupted: the page process that was writing it stopped. What it had "
    "written is kept above; ask again (or Regenerate) for a whole answer.**"
)


def stale_after(settings: Settings) -> float:
    """Seconds without a save after which an in-progress answer has no process writing it."""
    return 3 * settings.persist_interval + 10


async def follow(thread: dict[str, Any], *, answers: LiveAnswers, settings: Settings, state: ChatState) -> None:
    """Called when a chat opens: follow its answer in progress, if it has one."""
    steps = thread.get("steps") or []
    live = await answers.join(thread["id"], cl.context.emitter, {s["id"] for s in steps})
    if live is not None:
        state.stop, state.busy = live.stop, live.task  # Stop in this tab stops it; a new question waits
        return
    step = _in_progress(steps)
    if step is None:
        return
    saved = last_saved(step["metadata"][RECORD_KEY])
    if saved is None or time.time() - saved > stale_after(settings):
        await mark_interrupted(step)
    else:
        state.following = asyncio.create_task(_follow_saves(step, settings))


def _in_progress(steps: list[StepDict]) -> StepDict | None:
    for step in reversed(steps):
        record = (step.get("metadata") or {}).get(RECORD_KEY) or {}
        if record.get("kind") == "answer":
            return step if record.get("outcome") == "in progress" else None
    return None


async def mark_interrupted(step: StepDict) -> None:
    """The stored part stays, marked interrupted in its record and in words under it."""
    record = step["metadata"][RECORD_KEY]
    record["outcome"] = "interrupted"
    step["output"] = f"{step.get('output') or ''}\n\n{INTERRUPTED}".lstrip()
    if (store := get_data_layer()) is not None:
        await store.update_step(step)
    await cl.context.emitter.update_step(step)


async def _follow_saves(step: StepDict, settings: Settings) -> None:
    """Another process streams it: show each save it makes until the answer ends or its saves stop."""
    emitter, store = cl.context.emitter, get_data_layer()
    if store is None:
        return
    await asyncio.sleep(AFTER_RESUME)
    await emitter.task_start()
    try:
        while True:
            await asyncio.sleep(settings.persist_interval)
            rows = await store.execute_sql(
                'SELECT "output", "metadata" FROM steps WHERE "id" = :id', {"id": step["id"]}
            )
            if not rows:
                return
            step["output"], step["metadata"] = rows[0]["output"], rows[0]["metadata"]
            await emitter.update_step(step)
            record = (step["metadata"] or {}).get(RECORD_KEY) or {}
            if record.get("outcome") != "in progress":
                return
            if time.time() - (last_saved(record) or 0) > stale_after(settings):
                await mark_interrupted(step)
                return
    finally:
        with contextlib.suppress(Exception):
            await emitter.task_end()
