"""Chainlit's SQLAlchemy data layer on our SQLite file (or PostgreSQL), with what SQLite needs from us.

1. Lists and dicts (tags, modes) are stored as JSON text: SQLite cannot bind them (the columns are TEXT
   in PostgreSQL too: one schema, backend/qa/history_db.py).
2. JSON columns come back decoded, as the page and `on_chat_resume` expect dicts and lists.
3. Text that cannot be UTF-8 (an unpaired surrogate from a paste of binary junk) is stored with
   U+FFFD in its place; SQLite would refuse the whole row otherwise, losing the question.
4. A first login inserts the user unless it is there by then: Chainlit's create_user reads, then
   inserts, so two first logins of one user at once (a booth's tabs reopening, or two page processes)
   raced into a UNIQUE-constraint error.
5. A failed write is not only logged (the base class swallows it): the user is told once per chat
   that the history could not be saved, so nobody believes a verdict was recorded when it was not.
6. Feedback is the QA user's verdict (backend/qa/verdicts.py). The base class leaves out empty
   fields when it updates one, so a verdict changed without a comment kept the old verdict's comment.
7. Every statement runs whole in one thread of our own, on one SQLite connection: one hop from the
   event loop per statement. Through SQLAlchemy's async engine a statement took 8-10 hops (begin,
   execute, fetch, commit, return to the pool, each a round trip to aiosqlite's thread), and with 16
   answers streaming each hop waited a turn of the busy event loop: the last write of an answer took
   0.3-0.7 s, and the next question waited for it (docs/benchmark.md). One connection also means the
   page's own writes never wait on SQLite's file lock for each other.
8. In PostgreSQL (RCHAT_DATABASE_URL, several machines) the same tables take the same statements through
   the base class's SQLAlchemy engine on asyncpg (`PostgresHistoryStore`); points 1-6 hold there too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from chainlit.data.sql_alchemy import SQLAlchemyDataLayer
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import create_async_engine

from backend.qa.history_db import BUSY_TIMEOUT_S, use_wal

log = logging.getLogger(__name__)
SURROGATE = re.compile("[\ud800-\udfff]")
JSON_COLUMNS = {
    "metadata",
    "tags",
    "generation",
    "modes",
    "step_metadata",
    "step_tags",
    "step_generation",
    "thread_metadata",
    "thread_tags",
    "props",
}  # props: a custom element's, read as a dict
SAVE_FAILED = (
    "This chat could not be saved to the history database ({reason}). It stays on this page; "
    "use *Export chat* to keep a copy, and ask whoever runs the app to check the disk."
)


def _encode(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(value)  # ASCII-escaped, so surrogates inside are safe
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value)
    return value


def _decode(key: str, value: Any) -> Any:
    if key in JSON_COLUMNS and isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class _Store(SQLAlchemyDataLayer):
    """What both databases need from us (points 1-6 above); `_run` runs one statement."""

    _errors: tuple[type[BaseException], ...] = ()

    def __init__(self, conninfo: str) -> None:
        super().__init__(conninfo=conninfo, storage_provider=None)
        self._user_lock = asyncio.Lock()

    async def create_user(self, user):
        """Chainlit's create_user reads, then inserts: two first logins of one user at once (two tabs, or
        two page processes) raced into a UNIQUE-constraint error. An insert that yields to the winner does not."""
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

    async def execute_sql(self, query: str, parameters: dict):
        parameters = {k: _encode(v) for k, v in parameters.items()}
        try:
            return await self._run(query, parameters)
        except self._errors as err:
            reason = str(getattr(err, "orig", None) or err).splitlines()[0]  # SQLAlchemy's: the driver's words
            log.warning("history database error: %s", reason)
            await _tell_user_once(reason)
            return None

    async def _run(self, query: str, parameters: dict) -> list[dict[str, Any]] | int:
        raise NotImplementedError


class HistoryStore(_Store):
    """The SQLite file: every statement in one thread of our own, on one connection (point 7)."""

    _errors = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        # The base class's SQLAlchemy engine is made but never connects: _run below is the only way in.
        super().__init__(f"sqlite+aiosqlite:///{path}")
        self.path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-db")
        self._db: sqlite3.Connection | None = None  # opened in that thread, used only there

    async def _run(self, query: str, parameters: dict) -> list[dict[str, Any]] | int:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._execute, query, parameters)

    def _execute(self, query: str, parameters: dict) -> list[dict[str, Any]] | int:
        """One statement in its own transaction, in the store's thread: rows as dicts, else the rowcount."""
        if self._db is None:
            self._db = _connect(self.path)
        with self._db:  # commits, or rolls back on an error
            cursor = self._db.execute(query, parameters)
            if cursor.description is None:
                return cursor.rowcount
            names = [column[0] for column in cursor.description]
            return [{k: _decode(k, v) for k, v in zip(names, row, strict=True)} for row in cursor.fetchall()]

    async def close(self) -> None:
        def _close() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        await asyncio.get_running_loop().run_in_executor(self._thread, _close)
        self._thread.shutdown(wait=False)
        await super().close()


class PostgresHistoryStore(_Store):
    """PostgreSQL (RCHAT_DATABASE_URL, backend/qa/history_pg.py) through the base class's SQLAlchemy engine
    on asyncpg, each statement its own transaction. One connection per page process, its statements in the
    order they were made, as in SQLite: Chainlit stores a message's updates from background tasks, and
    through a pool of connections an earlier partial save could land after the answer's last one. The
    server orders the writes of the other processes and machines."""

    _errors = (SQLAlchemyError, OSError, TimeoutError)  # OSError, TimeoutError: the server is unreachable

    def __init__(self, url: str) -> None:
        super().__init__(url)
        # pre-ping: after a server restart the next statement reconnects instead of failing
        self.engine = create_async_engine(
            url, pool_size=1, max_overflow=0, pool_pre_ping=True, connect_args={"timeout": 10, "command_timeout": 30}
        )  # seconds
        self.async_session = None  # the base class's sessions are never used: _run below is the only way in
        self._turn = asyncio.Lock()  # first come, first served

    async def _run(self, query: str, parameters: dict) -> list[dict[str, Any]] | int:
        async with self._turn, self.engine.begin() as db:  # commits, or rolls back on an error
            result = await db.execute(text(query), parameters)
            if not result.returns_rows:
                return result.rowcount
            return [{k: _decode(k, v) for k, v in row._mapping.items()} for row in result.fetchall()]


def _connect(path: Path) -> sqlite3.Connection:
    # The busy timeout: the other pages' processes (and an accuracy run) write to the same file; a
    # write waits for theirs to commit (milliseconds) instead of failing with "database is locked".
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    # WAL: a commit is one append (and no fsync with synchronous=NORMAL) instead of a rollback journal
    # synced twice, and readers (the export CLI) do not block writers, so many streaming sessions' writes
    # do not queue on the file lock and hold answers up (docs/benchmark.md, "--fast-server"). An app
    # crash still loses nothing committed; a power cut may lose the last commits.
    use_wal(db)
    db.execute("PRAGMA synchronous = NORMAL")
    return db


async def _tell_user_once(reason: str) -> None:
    from chainlit.context import context
    from chainlit.message import Message

    from backend.errors import NOTICE, as_notice

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
        await Message(content=as_notice(SAVE_FAILED.format(reason=reason)), author=NOTICE).send()
    except Exception:  # the notice itself must never break the chat
        log.exception("could not show the save-failed notice")
