"""Stop pressed in a tab on another page process: asked through the history, honoured at the next save.

A tab that follows an answer streamed by another page process (backend/page/follow.py) cannot reach
that process's task. Its Stop stamps the chat (thread metadata) with the time it was pressed; the
streaming process reads the stamp beside each partial save (every RCHAT_PERSIST_INTERVAL seconds) and
stops its answer if the stamp is newer than the answer's start.
"""

from __future__ import annotations

import json
import time

from chainlit.data import get_data_layer

STOP_KEY = "rchat_stop_asked_at"  # in a thread's metadata: when a tab elsewhere pressed Stop (epoch s)


async def ask_stop(thread_id: str) -> None:
    if (store := get_data_layer()) is not None:
        await store.update_thread(thread_id, metadata={STOP_KEY: time.time()})


async def stop_asked_since(thread_id: str, since: float) -> bool:
    """Whether a tab on another process pressed Stop in this chat after `since` (epoch seconds)."""
    store = get_data_layer()
    if store is None:
        return False
    rows = await store.execute_sql('SELECT "metadata" FROM threads WHERE "id" = :id', {"id": thread_id})
    raw = rows[0].get("metadata") if rows else None
    metadata = json.loads(raw) if isinstance(raw, str) else raw or {}
    asked = metadata.get(STOP_KEY) if isinstance(metadata, dict) else None
    return isinstance(asked, int | float) and asked >= since
