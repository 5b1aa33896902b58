"""Notices on the page (not answers), the hook guard that turns our bugs into words, and the
"model server is down" message kept up to date while we wait for it."""

from __future__ import annotations

import functools
import logging

import chainlit as cl

from backend.chat.health import describe_down, is_healthy, wait_until_healthy
from backend.errors import NOTICE, as_notice, user_message
from backend.settings import Settings

log = logging.getLogger(__name__)
HEALTH_FRESH_FOR = 2.0  # seconds a good /health answer stands for every session's next message


async def notice(text: str) -> None:
    await cl.Message(content=as_notice(text), author=NOTICE).send()


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


async def wait_for_backend(settings: Settings) -> bool:
    """If the server is down, say so in one message kept up to date, and wait for it to come back."""
    if await is_healthy(settings, fresh_for=HEALTH_FRESH_FOR):
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
