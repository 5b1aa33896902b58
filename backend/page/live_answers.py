"""Answers that outlive their tab: a reloaded tab, a second tab, or a reconnect follows the answer live.

Each answer streaming in this page process is listed by chat (thread) in `LiveAnswers`. A tab that
opens the chat meanwhile (`on_chat_resume`) joins it as a watcher: it gets every update of the
answer's steps, a Stop that stops it, and the end. An answer stored "in progress" that no process
here is streaming is either streamed by another page process (followed through its saves in the
history) or was cut off when its process died: then the stored part is marked interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chainlit.emitter import BaseChainlitEmitter
from chainlit.step import StepDict

PUSH_EVERY = 0.25  # seconds between updates sent to watching tabs
AFTER_RESUME = 0.3  # seconds after the resume hook returns: Chainlit's resume event has gone out by then
SAVED_KEY = "rchat_saved_at"  # in a thinking step's metadata: when it was last stored (epoch seconds)


@dataclass
class Watcher:
    emitter: BaseChainlitEmitter
    known: set[str]  # step ids its page already has (else an update is sent as a new message)


@dataclass
class LiveAnswer:
    """One answer streaming in this process, and the tabs watching it besides its own."""

    thread_id: str
    stop: asyncio.Event
    task: asyncio.Task | None = None  # the answer's task: a watching tab is busy while it runs
    watchers: list[Watcher] = field(default_factory=list)
    items: dict[str, Any] = field(default_factory=dict)  # step id -> its Step or Message, as it streams
    pushed_at: float = 0.0
    done: bool = False  # ended: a tab that joins now gets the answer without being told it runs

    async def show(self, item: Any, *, now: bool = False) -> None:
        """One of the answer's steps changed: to every watcher (every PUSH_EVERY at most, or `now`)."""
        self.items[item.id] = item
        if not self.watchers or (not now and time.monotonic() - self.pushed_at < PUSH_EVERY):
            return
        self.pushed_at = time.monotonic()
        steps = [i.to_dict() for i in self.items.values()]
        for watcher in list(self.watchers):
            await _push(watcher, steps)

    async def ended(self) -> None:
        self.done = True
        for watcher in self.watchers:
            with contextlib.suppress(Exception):
                await watcher.emitter.task_end()


async def _push(watcher: Watcher, steps: list[StepDict]) -> None:
    for step in steps:
        try:
            if step["id"] in watcher.known:
                await watcher.emitter.update_step(step)
            else:
                await watcher.emitter.send_step(step)
                watcher.known.add(step["id"])
        except Exception:  # noqa: BLE001 - a tab that went away stops nothing
            continue


class LiveAnswers:
    """The answers streaming in this page process, by chat."""

    def __init__(self) -> None:
        self.by_thread: dict[str, LiveAnswer] = {}

    @contextlib.contextmanager
    def streaming(self, thread_id: str, stop: asyncio.Event) -> Iterator[LiveAnswer]:
        live = LiveAnswer(thread_id, stop, asyncio.current_task())
        self.by_thread[thread_id] = live
        try:
            yield live
        finally:
            live.done = True  # however it ended (an error too): a tab joining late is not told it runs
            if self.by_thread.get(thread_id) is live:
                del self.by_thread[thread_id]

    async def join(
        self, thread_id: str, emitter: BaseChainlitEmitter, known: set[str], resumed: asyncio.Event
    ) -> LiveAnswer | None:
        """Watch the chat's answer if one streams here: its latest state once the tab has the stored chat
        (`resumed`), then every update."""
        live = self.by_thread.get(thread_id)
        if live is None:
            return None
        asyncio.create_task(_welcome(Watcher(emitter, set(known)), live, resumed))
        return live


async def after_resume(resumed: asyncio.Event) -> None:
    """Until the tab has the stored chat: Chainlit sends it right after on_chat_resume returns (which sets
    `resumed`), and it replaces what the tab shows and ends any task it showed. Under load that hook can
    take seconds, so a fixed wait was not enough: a reloaded tab lost the answer it had joined."""
    await resumed.wait()
    await asyncio.sleep(AFTER_RESUME)


async def _welcome(watcher: Watcher, live: LiveAnswer, resumed: asyncio.Event) -> None:
    """Once the tab has the chat, it is told the answer runs (it shows Stop), gets the answer as it is now,
    and from then on every update. Not before: what it was sent earlier, the stored chat replaces."""
    await after_resume(resumed)
    live.watchers.append(watcher)
    if not live.done:
        await watcher.emitter.task_start()
    await _push(watcher, [i.to_dict() for i in live.items.values()])


def last_saved(record: dict[str, Any]) -> float | None:
    """When an in-progress answer was last stored (epoch seconds), from its stamp's finished_at."""
    return epoch((record.get("stamp") or {}).get("finished_at"))


def epoch(stamp: object) -> float | None:
    """An ISO time as stored (a stamp's, a step's createdAt) in epoch seconds; None if it is not one."""
    try:
        return datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        return None
