"""Notices on the page (not answers), the hook guard that turns our bugs into words, and the
"model server is down" message kept up to date while we wait for it."""

from __future__ import annotations

import asyncio
import functools
import logging

import chainlit as cl
from chainlit.session import WebsocketSession

from backend.chat.health import HealthChecker, describe_down, is_healthy, server_warning, wait_until_healthy
from backend.errors import NOTICE, as_notice, user_message
from backend.settings import Settings

log = logging.getLogger(__name__)
HEALTH_FRESH_FOR = 2.0  # seconds a good /health answer stands for every session's next message
WATCH_EVERY = 3.0  # seconds between updates of an open chat's "the model server is starting" notice
STARTING = "The model server is starting"  # how BackendStatus.describe() begins for a first start
_watching: set[asyncio.Task] = set()


async def notice(text: str) -> None:
    await cl.Message(content=as_notice(text), author=NOTICE).send()


def guarded(hook):
    """A hook that never shows a stack trace: a bug of ours is logged and told in one sentence."""

    @functools.wraps(hook)
    async def wrapper(*args, **kwargs):
        try:
            return await hook(*args, **kwargs)
        except Exception as err:  # the page must get words, the log the trace
            log.exception("%s failed", hook.__name__)
            await notice(user_message(err))

    return wrapper


async def wait_for_backend(settings: Settings, *, health: HealthChecker | None = None) -> bool:
    """If the server is down, say so in one message kept up to date, and wait for it to come back."""
    if await is_healthy(settings, checker=health, fresh_for=HEALTH_FRESH_FOR):
        return True
    first = describe_down(settings)
    status = cl.Message(content=as_notice(first), author=NOTICE)
    await status.send()
    ok = await wait_until_healthy(settings, on_wait=_updater(status), timeout=settings.startup_timeout, checker=health)
    again = "" if first.startswith(STARTING) else " again"
    status.content = as_notice(
        f"The model server is ready{again}; answering now."
        if ok
        else describe_down(settings) + " Your message is kept: send it again later."
    )
    await status.update()
    return ok


def _updater(message: cl.Message):
    async def show(text: str) -> None:
        if message.content != as_notice(text):
            message.content = as_notice(text)
            await message.update()

    return show


async def watch_backend(settings: Settings, *, health: HealthChecker | None = None) -> None:
    """A chat opened while the server is not ready: one notice saying how its start goes (the
    launcher's phase, seconds so far), kept up to date without a reload until it is ready or given up."""
    message = cl.Message(content=as_notice(describe_down(settings)), author=NOTICE)
    await message.send()
    task = asyncio.create_task(_keep_up_to_date(settings, message, health), name="server-notice")
    _watching.add(task)  # the loop keeps only a weak reference to a task
    task.add_done_callback(_watching.discard)


async def _keep_up_to_date(settings: Settings, message: cl.Message, health: HealthChecker | None) -> None:
    show, session_id = _updater(message), cl.context.session.id

    async def show_while_open(text: str) -> None:
        if WebsocketSession.get_by_id(session_id) is None:
            raise LookupError("the page was closed")  # nobody left to tell: stop polling
        await show(text)

    try:
        ok = await wait_until_healthy(
            settings, on_wait=show_while_open, timeout=settings.startup_timeout, every=WATCH_EVERY, checker=health
        )
        text = describe_down(settings)
        if ok:
            text = " ".join(filter(None, ["The model server is ready: ask away.", server_warning(settings)]))
        await show_while_open(text)
    except Exception:  # a page closed meanwhile: nothing left to tell
        log.debug("the server notice stopped", exc_info=True)
