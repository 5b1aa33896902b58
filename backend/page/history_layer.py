"""Chainlit's SQLAlchemy data layer on the history (the SQLite file or PostgreSQL), and the notice of a
failed save. How statements run on each database is backend/qa/history_store.py; this adds what the page
needs from Chainlit's side:

1. A first login inserts the user unless it is there by then: Chainlit's create_user reads, then
   inserts, so two first logins of one user at once (a booth's tabs reopening, or two page processes)
   would race into a UNIQUE-constraint error.
2. A failed write is not only logged (the base class swallows it): the user is told once per chat
   that the history could not be saved, so nobody believes a verdict was recorded when it was not.
3. Feedback is the QA user's verdict (backend/qa/verdicts.py). The base class leaves out empty
   fields when it updates one, so a verdict changed without a comment would keep the old one's comment.
4. A comparison's custom element is stored as its props, without Chainlit's blob store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from pathlib import Path

from chainlit.context import context
from chainlit.data.sql_alchemy import SQLAlchemyDataLayer

from backend.page.notices import notice
from backend.qa.history_store import PostgresStatements, Rows, SqliteStatements, encode
from backend.settings import Settings

log = logging.getLogger(__name__)
SAVE_FAILED = (
    "This chat could not be saved to the history database ({reason}). It stays on this page; "
    "use *Export chat* to keep a copy, and ask whoever runs the app to check the disk."
)


class HistoryLayer(SQLAlchemyDataLayer):
    """Chainlit's data layer whose every statement goes through `statements` (points 1-4 above)."""

    def __init__(self, conninfo: str, statements: SqliteStatements | PostgresStatements) -> None:
        # The base class's SQLAlchemy engine is made but never connects: execute_sql is the only way in.
        super().__init__(conninfo=conninfo, storage_provider=None)
        self.async_session = None  # the base class's sessions are never used
        self.statements = statements
        self._user_lock = asyncio.Lock()

    async def create_user(self, user):
        """Chainlit's create_user reads, then inserts: two first logins of one user at once (two tabs, or two
        page processes) would race into a UNIQUE-constraint error. An insert that yields to the winner does not."""
        async with self._user_lock:
            if await self.get_user(user.identifier) is None:
                await self.execute_sql(
                    'INSERT INTO users ("id", "identifier", "createdAt", "metadata") '
                    'VALUES (:id, :identifier, :createdAt, :metadata) ON CONFLICT ("identifier") DO NOTHING',
                    {
                        "id": str(uuid.uuid4()),
                        "identifier": str(user.identifier),
                        "createdAt": await self.get_current_timestamp(),
                        "metadata": json.dumps(user.metadata),
                    },
                )
                return await self.get_user(user.identifier)
            return await super().create_user(user)  # updates the metadata, as Chainlit does

    async def upsert_feedback(self, feedback):
        feedback.comment = feedback.comment or ""  # stored as given, even when empty
        return await super().upsert_feedback(feedback)

    async def create_element(self, element):
        """A custom element (a comparison's) is its props, not a file: stored without Chainlit's blob
        store, so that a resumed chat shows it. Other elements are left to Chainlit (none here)."""
        if getattr(element, "type", None) != "custom" or not element.for_id:
            return await super().create_element(element)
        row = {
            "id": element.id,
            "threadId": element.thread_id,
            "forId": element.for_id,
            "type": "custom",
            "name": element.name,
            "display": element.display,
            "mime": element.mime,
            "url": element.url,
            "props": json.dumps(element.props),
        }
        columns = ", ".join(f'"{k}"' for k in row)
        await self.execute_sql(
            f"INSERT INTO elements ({columns}) VALUES ({', '.join(':' + k for k in row)}) "
            'ON CONFLICT ("id") DO UPDATE SET "props" = :props',
            row,
        )

    async def execute_sql(self, query: str, parameters: dict) -> Rows | None:
        try:
            return await self.statements.run(query, encode(parameters))
        except self.statements.errors as err:
            reason = str(getattr(err, "orig", None) or err).splitlines()[0]  # SQLAlchemy's: the driver's words
            log.warning("history database error: %s", reason)
            await _tell_user_once(reason)
            return None

    async def close(self) -> None:
        await self.statements.close()
        await super().close()


class SqliteHistoryLayer(HistoryLayer):
    def __init__(self, path: Path) -> None:
        super().__init__(f"sqlite+aiosqlite:///{path}", SqliteStatements(path))


class PostgresHistoryLayer(HistoryLayer):
    def __init__(self, url: str) -> None:
        super().__init__(url, PostgresStatements(url))


def history_layer(settings: Settings) -> HistoryLayer:
    """The data layer on the history the settings name (RCHAT_DATABASE_URL, else the SQLite file)."""
    if settings.history_url:
        return PostgresHistoryLayer(settings.history_url)
    return SqliteHistoryLayer(settings.history_path)


async def _tell_user_once(reason: str) -> None:
    try:
        session = context.session
    except Exception:  # noqa: BLE001 - no chat around this write (startup, a REST call)
        return
    flags = getattr(session, "rchat_flags", None)
    if flags is None:
        flags = session.rchat_flags = set()  # type: ignore[union-attr]  # our flag, kept on Chainlit's session
    if "save failed" in flags:
        return
    flags.add("save failed")
    try:
        await notice(SAVE_FAILED.format(reason=reason))
    except Exception:  # the notice itself must never break the chat
        log.exception("could not show the save-failed notice")
