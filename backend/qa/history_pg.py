"""The history in PostgreSQL (RCHAT_DATABASE_URL): the same tables as the SQLite file, for several machines.

backend/qa/history_db.py owns the schema (TABLES, INDEXES); this module creates and migrates it in
PostgreSQL, and keeps what every page process on every machine must share besides the chats: the
auth secret that signs login cookies. `rchat_meta` holds our schema version and that secret.

  no rchat_meta and none of our tables: an empty database -> created
  an older schema version: missing tables, columns and indexes added (in one transaction)
  a newer version, or our tables without rchat_meta (made by something else): refused with a message
  unreachable (down, wrong host, password or database name): refused with a message

Refusing means history off, worded as for an unusable SQLite file (backend/qa/setup.py). Every page
prepares the database at start; an advisory lock lets one process at a time do it, on any machine.
The page's data layer (backend/page/history_layer.PostgresHistoryLayer, its statements run by
backend/qa/history_store.PostgresStatements) then reads and writes the tables;
readers outside it (export, replay) take a `PgHistory` where they took the SQLite file's path.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg
from sqlalchemy.engine import make_url

from backend.errors import HistoryUnavailable
from backend.qa.history_db import INDEXES, SCHEMA_VERSION, TABLES

CONNECT_TIMEOUT_S = 10.0
LOCK_KEY = 0x72636861_74000001  # pg_advisory_xact_lock's key for "rchat schema"
META = 'CREATE TABLE IF NOT EXISTS rchat_meta ("name" TEXT PRIMARY KEY, "value" TEXT NOT NULL)'
T = TypeVar("T")


def where(url: str) -> str:
    """The database for messages and logs: the URL without its password."""
    u = make_url(url)
    return f"postgresql://{u.username or ''}@{u.host or 'localhost'}:{u.port or 5432}/{u.database or ''}"


def _pg_kind(kind: str) -> str:
    return kind.replace("BOOLEAN NOT NULL DEFAULT 0", "BOOLEAN NOT NULL DEFAULT false")


def schema_statements() -> list[str]:
    """Idempotent DDL: creates what is missing, leaves what is there (a migration adds columns)."""
    statements = [META]
    for table, columns in TABLES.items():
        listed = ", ".join(f'"{name}" {_pg_kind(kind)}' for name, kind in columns)
        statements.append(f"CREATE TABLE IF NOT EXISTS {table} ({listed})")
        statements += [
            f'ALTER TABLE {table} ADD COLUMN IF NOT EXISTS "{name}" {_pg_kind(kind)}' for name, kind in columns
        ]
    return statements + INDEXES


def _run(work: Callable[[asyncpg.Connection], Awaitable[T]], url: str) -> T:
    """Run `work` on one connection, in a thread with its own event loop: callers are plain functions,
    called at start inside or outside a running loop (app.py's import, the launcher, the CLI)."""

    async def connected() -> T:
        try:
            db = await asyncpg.connect(_dsn(url), timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            raise HistoryUnavailable(
                f"Cannot reach the history database {where(url)} ({_reason(err)}). Check RCHAT_DATABASE_URL "
                "and that the server is up and reachable from here, then restart."
            ) from None
        try:
            return await work(db)
        except asyncpg.PostgresError as err:
            raise HistoryUnavailable(
                f"The history database {where(url)} cannot be used ({_reason(err)}). "
                "Nothing was changed in it: fix RCHAT_DATABASE_URL or the database, "
                "then restart."
            ) from None
        finally:
            await db.close()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-pg") as pool:
        return pool.submit(asyncio.run, connected()).result()


def _dsn(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"postgresql://{rest}" if scheme.startswith("postgres") else url


def _reason(err: BaseException) -> str:
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


async def _version(db: asyncpg.Connection, url: str) -> int | None:
    """Our schema version; None for an empty database. Refuses what this app cannot use."""
    if await db.fetchval("SELECT to_regclass('rchat_meta')") is not None:
        version = int(await db.fetchval("SELECT value FROM rchat_meta WHERE name = 'schema_version'") or 0)
        if version > SCHEMA_VERSION:
            raise HistoryUnavailable(
                f"The history database {where(url)} has schema version {version}, made by a "
                f"newer version of this app (this one knows up to {SCHEMA_VERSION}). Update "
                "the app, or set RCHAT_DATABASE_URL to another database."
            )
        return version
    ours = [t for t in TABLES if await db.fetchval("SELECT to_regclass($1)", t) is not None]
    if ours:
        raise HistoryUnavailable(
            f"The history database {where(url)} has tables ({', '.join(ours)}) that this app "
            "did not make (no rchat_meta). They were left as they were: set RCHAT_DATABASE_URL "
            "to an empty database, then restart."
        )
    return None


def prepare(url: str) -> str:
    """Create or migrate the schema; return what was done (for the log). Raises HistoryUnavailable."""

    async def work(db: asyncpg.Connection) -> str:
        async with db.transaction():  # PostgreSQL's DDL is transactional: a failed migration changes nothing
            await db.execute("SELECT pg_advisory_xact_lock($1)", LOCK_KEY)  # pages starting together: one at a time
            version = await _version(db, url)
            if version == SCHEMA_VERSION:
                return f"history database {where(url)} (schema {version})"
            for statement in schema_statements():
                await db.execute(statement)
            await db.execute(
                "INSERT INTO rchat_meta (name, value) VALUES ('schema_version', $1) "
                "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                str(SCHEMA_VERSION),
            )
        if version is None:
            return f"created history database {where(url)} (schema {SCHEMA_VERSION})"
        return f"migrated history database {where(url)} from schema {version} to {SCHEMA_VERSION}"

    return _run(work, url)


def inspect(url: str) -> str:
    """What prepare() would do, changing nothing (`backend check`, the launcher's preflight)."""

    async def work(db: asyncpg.Connection) -> str:
        version = await _version(db, url)
        if version is None:
            return f"history database {where(url)} will be created"
        if version == SCHEMA_VERSION:
            return f"history database {where(url)} (schema {version})"
        return f"history database {where(url)} will be migrated from schema {version} to {SCHEMA_VERSION}"

    return _run(work, url)


def keep_secret(url: str, candidate: str) -> str:
    """The auth secret every page on every machine signs with: `candidate` if none is stored yet."""

    async def work(db: asyncpg.Connection) -> str:
        await db.execute(
            "INSERT INTO rchat_meta (name, value) VALUES ('auth_secret', $1) ON CONFLICT (name) DO NOTHING", candidate
        )
        return await db.fetchval("SELECT value FROM rchat_meta WHERE name = 'auth_secret'")

    return _run(work, url)


@dataclass(frozen=True)
class PgHistory:
    """The PostgreSQL history, for readers that take the SQLite file's path otherwise (export, replay).
    Shown as its URL without the password."""

    url: str

    def __str__(self) -> str:
        return where(self.url)


NAMED = re.compile(r"(?<!:):([A-Za-z_]\w*)")


def fetch(url: str, query: str, parameters: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows as dicts, for a query written for sqlite3 with :named parameters (asyncpg numbers them)."""
    names: list[str] = []

    def number(match: re.Match) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    numbered = NAMED.sub(number, query)

    async def work(db: asyncpg.Connection) -> list[dict[str, Any]]:
        return [dict(row) for row in await db.fetch(numbered, *(parameters[n] for n in names))]

    return _run(work, url)
