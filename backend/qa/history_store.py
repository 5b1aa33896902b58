"""How the page's history statements run on our SQLite file (or PostgreSQL), with what SQLite needs from us.

Chainlit-free: the page's data layer (backend/page/history_layer.py) hands every statement to one of
these, and anything else that must write the history the page's way can do the same.

1. Lists and dicts (tags, modes) are stored as JSON text: SQLite cannot bind them (the columns are TEXT
   in PostgreSQL too: one schema, backend/qa/history_db.py).
2. JSON columns come back decoded, as the page and `on_chat_resume` expect dicts and lists.
3. Text that cannot be UTF-8 (an unpaired surrogate from a paste of binary junk) is stored with
   U+FFFD in its place; SQLite would refuse the whole row otherwise, losing the question.
4. Every statement runs whole in one thread of our own, on one SQLite connection: one hop from the
   event loop per statement, where SQLAlchemy's async engine takes several, each waiting a turn of a
   busy event loop (docs/benchmark.md). One connection also means the page's own writes never wait on
   SQLite's file lock for each other.
5. In PostgreSQL (RCHAT_DATABASE_URL, several machines) the same tables take the same statements
   through a SQLAlchemy engine on asyncpg, one connection, in the order they were made.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import create_async_engine

from backend.qa.history_db import BUSY_TIMEOUT_S, use_wal

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
Rows = list[dict[str, Any]] | int  # rows as dicts, else the rowcount


def encode(parameters: dict[str, Any]) -> dict[str, Any]:
    """Points 1 and 3: what each database can bind."""
    return {k: _encode(v) for k, v in parameters.items()}


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


class SqliteStatements:
    """The SQLite file: every statement in one thread of our own, on one connection (point 4)."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-db")
        self._db: sqlite3.Connection | None = None  # opened in that thread, used only there

    async def run(self, query: str, parameters: dict[str, Any]) -> Rows:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._execute, query, parameters)

    def _execute(self, query: str, parameters: dict[str, Any]) -> Rows:
        """One statement in its own transaction, in the store's thread."""
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


class PostgresStatements:
    """PostgreSQL (RCHAT_DATABASE_URL, backend/qa/history_pg.py) through a SQLAlchemy engine on asyncpg, each
    statement its own transaction. One connection per page process, its statements in the order they were
    made, as in SQLite: Chainlit stores a message's updates from background tasks, and through a pool of
    connections an earlier partial save could land after the answer's last one. The server orders the
    writes of the other processes and machines."""

    errors: tuple[type[BaseException], ...] = (SQLAlchemyError, OSError, TimeoutError)  # OSError: unreachable

    def __init__(self, url: str) -> None:
        # pre-ping: after a server restart the next statement reconnects instead of failing
        self.engine = create_async_engine(
            url, pool_size=1, max_overflow=0, pool_pre_ping=True, connect_args={"timeout": 10, "command_timeout": 30}
        )  # seconds
        self._turn = asyncio.Lock()  # first come, first served

    async def run(self, query: str, parameters: dict[str, Any]) -> Rows:
        async with self._turn, self.engine.begin() as db:  # commits, or rolls back on an error
            result = await db.execute(text(query), parameters)
            if not result.returns_rows:
                return result.rowcount
            return [{k: _decode(k, v) for k, v in row._mapping.items()} for row in result.fetchall()]

    async def close(self) -> None:
        await self.engine.dispose()


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
