"""One chat's state on the page, typed: one object in Chainlit's user session instead of loose keys."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import chainlit as cl

from backend.chat.conversation import Conversation
from backend.chat.sampling import Sampling

KEY = "rchat_chat"  # the user-session key that holds it


@dataclass
class ChatState:
    """What the page keeps of one open chat between messages."""

    conversation: Conversation
    sampling: Sampling
    busy: asyncio.Task | None = None  # the answer (or comparison) running now
    stop: asyncio.Event | None = None  # set by Stop: read after every piece of the answer
    actions: list[cl.Action] = field(default_factory=list)  # the newest answer's buttons
    comparisons: dict[str, Any] = field(default_factory=dict)  # comparison id -> its view, until voted
    following: asyncio.Task | None = None  # following an answer another page process streams

    def begin(self) -> asyncio.Event:
        """An answer starts in this task: it is the one Stop stops and new questions wait for."""
        self.busy, self.stop = asyncio.current_task(), asyncio.Event()
        return self.stop

    def busy_elsewhere(self) -> bool:
        """An earlier answer still runs (this message came on another task)."""
        return self.busy is not None and not self.busy.done() and self.busy is not asyncio.current_task()


def chat_state() -> ChatState | None:
    state = cl.user_session.get(KEY)
    return state if isinstance(state, ChatState) else None  # a resumed session's stored copy is not one


def start_chat(sampling: Sampling, conversation: Conversation | None = None) -> ChatState:
    state = ChatState(conversation=conversation or Conversation(), sampling=sampling)
    cl.user_session.set(KEY, state)
    return state
