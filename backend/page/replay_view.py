"""The Replay button under an answer: send its stamped request again, post the comparison below it.

The comparison is stored with the chat (record kind "replay", so exports and resumed chats skip it
as an answer) and says identical, different or not comparable and why (backend/qa/replay.py).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import chainlit as cl
import openai

from backend.errors import ChatAppError, as_notice, user_message
from backend.page.notices import notice
from backend.qa.export import history_source
from backend.qa.replay import find_record, replay
from backend.qa.replay_report import render_markdown
from backend.records import RECORD_KEY
from backend.settings import Settings

log = logging.getLogger(__name__)
REPLAY_AUTHOR = "Replay"


def replay_action() -> cl.Action:
    return cl.Action(
        name="replay",
        payload={},
        label="Replay",
        icon="repeat",
        tooltip="Send this answer's stamped request again (same messages, settings and seed) "
        "and compare: identical, different or not comparable",
    )


async def send_replay(
    client: openai.AsyncOpenAI, settings: Settings, *, thread_id: str, answer_id: str, history_off_reason: str
) -> None:
    """Replay the stored answer `answer_id` of this chat and post the match with both answers."""
    if history_off_reason:
        await notice(f"{history_off_reason} So there is no stored answer to replay.")
        return
    try:
        record = await asyncio.to_thread(find_record, history_source(settings), answer_id, thread_id=thread_id)
    except (ChatAppError, sqlite3.Error) as err:
        await notice(f"Could not replay this answer: {err}")
        return
    message = cl.Message(
        content=as_notice("Replaying this answer with its stamped request and seed…"), author=REPLAY_AUTHOR
    )
    await message.send()
    try:
        result = await replay(record, settings=settings, client=client)
    except ChatAppError as err:
        message.content = as_notice(f"The replay did not run: {err}")
    except Exception as err:  # a bug of ours must end in words, not a trace
        log.exception("replay failed")
        message.content = as_notice(f"The replay did not run: {user_message(err)}")
    else:
        message.content = render_markdown(result)
        log.info("replay of answer %s: %s", answer_id, result.match)
        message.metadata = {RECORD_KEY: {"kind": "replay", "of": answer_id, **result.as_dict()}}
    await message.update()
