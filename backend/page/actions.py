"""The buttons under an answer (Regenerate, Export chat, Replay) and what Export sends back."""

from __future__ import annotations

import asyncio
import sqlite3

import chainlit as cl

from backend.errors import NOTICE, HistoryUnavailable, as_notice
from backend.page.notices import notice
from backend.page.replay_view import replay_action
from backend.qa.export import history_source, load_records, render
from backend.settings import Settings


def answer_actions(sample: int) -> list[cl.Action]:
    return [
        cl.Action(
            name="regenerate",
            payload={"sample": sample},
            label="Regenerate",
            icon="refresh-cw",
            tooltip="Sample this answer again; this one stays",
        ),
        cl.Action(
            name="export",
            payload={},
            label="Export chat",
            icon="download",
            tooltip="Download this chat as JSONL and Markdown, with a reproducibility stamp per answer",
        ),
        replay_action(),
    ]


async def send_export(settings: Settings, *, thread_id: str, history_off_reason: str) -> None:
    """This chat's stored answers as two downloadable files."""
    if history_off_reason:
        await notice(f"{history_off_reason} So there is nothing stored to export.")
        return
    try:
        records = await asyncio.to_thread(load_records, history_source(settings), thread_id=thread_id)
    except (HistoryUnavailable, sqlite3.Error) as err:
        await notice(f"Could not read the history database to export this chat: {err}")
        return
    if not records:
        await notice("Nothing of this chat is stored yet: ask a question first, then export.")
        return
    files = [
        cl.File(
            name=f"chat-{thread_id[:8]}.{fmt}",
            content=render(records, fmt).encode(),
            display="inline",
            mime="application/jsonl" if fmt == "jsonl" else "text/markdown",
        )
        for fmt in ("jsonl", "md")
    ]
    await cl.Message(
        content=as_notice(
            f"Export of this chat: {len(records)} answer(s), each with its reproducibility stamp. Download below."
        ),
        author=NOTICE,
        elements=files,
    ).send()
