"""The history database: one SQLite file whose schema this project creates, versions and migrates.

The tables are the ones Chainlit 2.12's SQLAlchemy data layer reads and writes (users, threads,
steps, elements, feedbacks); requirements.txt pins that Chainlit release because the data layer's
columns have changed between releases. `PRAGMA user_version` holds our schema version:

  0 with tables: made by hand from Chainlit's docs, an older column set -> migrated after a backup
  1: current (a later version adds its step to `_prepare` the same way)
  newer, not SQLite, damaged, marked read-only: refused with a message; the file is never touched.

Refusing means the app runs with history off and says so on every new chat (`HistoryUnavailable`).

Several page processes share the file (one per port behind a load balancer): it is in WAL mode, every
connection waits BUSY_TIMEOUT_S for another's write, and `prepare` takes the write lock before it looks,
so pages starting together create or migrate it once.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

from backend.errors import HistoryUnavailable  # callers catch it from here too

SCHEMA_VERSION = 1
SQLITE_HEADER = b"SQLite format 3\x00"
# Seconds a connection waits for another process's write (N pages share one file) before an error.
BUSY_TIMEOUT_S = 15.0

# table -> columns (name, SQL type). Quoted camelCase names, because Chainlit's SQL uses them.
TABLES: dict[str, list[tuple[str, str]]] = {
    "users": [
        ("id", "TEXT PRIMARY KEY"),
        ("identifier", "TEXT NOT NULL UNIQUE"),
        ("metadata", "TEXT NOT NULL DEFAULT '{}'"),
        ("createdAt", "TEXT"),
    ],
    "threads": [
        ("id", "TEXT PRIMARY KEY"),
        ("createdAt", "TEXT"),
        ("name", "TEXT"),
        ("userId", "TEXT REFERENCES users(id) ON DELETE CASCADE"),
        ("userIdentifier", "TEXT"),
        ("tags", "TEXT"),
        ("metadata", "TEXT"),
    ],
    "steps": [
        ("id", "TEXT PRIMARY KEY"),
        ("name", "TEXT NOT NULL"),
        ("type", "TEXT NOT NULL"),
        ("threadId", "TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE"),
        ("parentId", "TEXT"),
        ("streaming", "BOOLEAN NOT NULL DEFAULT 0"),
        ("waitForAnswer", "BOOLEAN"),
        ("isError", "BOOLEAN"),
        ("metadata", "TEXT"),
        ("tags", "TEXT"),
        ("input", "TEXT"),
        ("output", "TEXT"),
        ("createdAt", "TEXT"),
        ("command", "TEXT"),
        ("modes", "TEXT"),
        ("start", "TEXT"),
        ("end", "TEXT"),
        ("generation", "TEXT"),
        ("showInput", "TEXT"),
        ("language", "TEXT"),
        ("indent", "INTEGER"),
        ("defaultOpen", "BOOLEAN"),
        ("autoCollapse", "BOOLEAN"),
    ],
    "elements": [
        ("id", "TEXT PRIMARY KEY"),
        ("threadId", "TEXT REFERENCES threads(id) ON DELETE CASCADE"),
        ("type", "TEXT"),
        ("url", "TEXT"),
        ("chainlitKey", "TEXT"),
        ("name", "TEXT NOT NULL"),
        ("display", "TEXT"),
        ("objectKey", "TEXT"),
        ("size", "TEXT"),
        ("page", "INTEGER"),
        ("language", "TEXT"),
        ("forId", "TEXT"),
        ("mime", "TEXT"),
        ("props", "TEXT"),
        ("autoPlay", "BOOLEAN"),
        ("playerConfig", "TEXT"),
    ],
    "feedbacks": [
        ("id", "TEXT PRIMARY KEY"),
        ("forId", "TEXT NOT NULL"),
        ("threadId", "TEXT REFERENCES threads(id) ON DELETE CASCADE"),
        ("value", "INTEGER NOT NULL"),
        ("comment", "TEXT"),
    ],
}
INDEXES = [
    'CREATE INDEX IF NOT EXISTS steps_thread ON steps ("threadId", "createdAt")',
    'CREATE INDEX IF NOT EXISTS threads_user ON threads ("userId")',
    'CREATE INDEX IF NOT EXISTS feedbacks_for ON feedbacks ("forId")',
]


def _create_table(db: sqlite3.Connection, table: str) -> None:
    columns = ", ".join(f'"{name}" {kind}' for name, kind in TABLES[table])
    db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")


def _missing_columns(db: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    return [(name, kind) for name, kind in TABLES[table] if name not in have]


def _add_column_sql(table: str, name: str, kind: str) -> str:
    # SQLite's ADD COLUMN takes no PRIMARY KEY/UNIQUE/REFERENCES; the columns we add are plain ones.
    plain = kind.split(" REFERENCES")[0].replace(" PRIMARY KEY", "").replace(" UNIQUE", "")
    return f'ALTER TABLE {table} ADD COLUMN "{name}" {plain}'


def _check_file(path: Path) -> None:
    if not path.exists():
        return
    if not path.is_file():
        raise HistoryUnavailable(f"The history database {path} is not a file. Set RCHAT_HISTORY_DB to a file path.")
    if not path.stat().st_mode & stat.S_IWUSR:
        raise HistoryUnavailable(
            f"The history database {path} is read-only. Make it writable "
            f"(chmod u+w {path}) or set RCHAT_HISTORY_DB to another file, then restart."
        )
    if path.stat().st_size and not _is_sqlite(path):
        raise HistoryUnavailable(
            f"The history database {path} is not a SQLite file (damaged or something else). "
            "It was left untouched: move it away or set RCHAT_HISTORY_DB to a new file, then restart."
        )


def backup(path: Path, version: int) -> Path:
    """A copy of the file as last committed. Read through a connection of its own: the caller holds the
    write lock, and a backup from the connection holding it waits forever (Python retries SQLITE_BUSY)."""
    target = path.with_name(f"{path.name}.schema-v{version}.bak")
    source = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    try:
        with sqlite3.connect(target) as copy:
            source.backup(copy)
        copy.close()
    finally:
        source.close()
    return target


def prepare(path: Path) -> str:
    """Create or migrate the database at `path`; return what was done (for the log).

    Raises HistoryUnavailable with a one-line reason when the file must not be touched. Safe to run
    from several processes at once (N pages starting together): one of them creates or migrates,
    the others wait for it (BEGIN IMMEDIATE) and then find the schema current.
    """
    _check_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: the transaction below is ours; Python's sqlite3 would run DDL outside one.
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except (OSError, sqlite3.Error) as err:
        raise HistoryUnavailable(
            f"Cannot open the history database {path}: {err}. "
            "Check the path and its folder's permissions (RCHAT_HISTORY_DB)."
        ) from None
    try:
        return _prepare(db, path)
    except sqlite3.DatabaseError as err:
        raise HistoryUnavailable(
            f"The history database {path} cannot be used ({err}). It was left as it was: "
            "move it away or set RCHAT_HISTORY_DB to a new file, then restart."
        ) from None
    finally:
        db.close()


def inspect(path: Path) -> str:
    """What prepare() would do, changing nothing (for `backend check` and the launcher's preflight).

    Raises HistoryUnavailable for the files prepare() would refuse.
    """
    _check_file(path)
    if not path.exists() or not path.stat().st_size:
        return f"history database {path} will be created"
    try:
        db = _open_readonly(path)
        try:
            version = _usable_version(db, path)
        finally:
            db.close()
    except sqlite3.DatabaseError as err:
        raise HistoryUnavailable(
            f"The history database {path} cannot be used ({err}). It was left as it was: "
            "move it away or set RCHAT_HISTORY_DB to a new file, then restart."
        ) from None
    if version == SCHEMA_VERSION:
        return f"history database {path} (schema {version})"
    return f"history database {path} will be migrated from schema {version} to {SCHEMA_VERSION}, after a backup"


def _usable_version(db: sqlite3.Connection, path: Path) -> int:
    """The file's schema version, if this app can use it."""
    if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
        raise sqlite3.DatabaseError("integrity check failed")
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise HistoryUnavailable(
            f"The history database {path} has schema version {version}, made by a newer "
            f"version of this app (this one knows up to {SCHEMA_VERSION}). Update the app, or "
            "set RCHAT_HISTORY_DB to another file."
        )
    return version


def _prepare(db: sqlite3.Connection, path: Path) -> str:
    if _usable_version(db, path) == SCHEMA_VERSION:
        return f"history database {path} (schema {SCHEMA_VERSION})"
    use_wal(db)  # before the transaction: the journal mode cannot change inside one
    db.execute("BEGIN IMMEDIATE")  # the write lock, taken before looking: one process migrates
    try:
        said = _create_or_migrate(db, path)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")  # a failed migration changes nothing
        raise
    return said


def _create_or_migrate(db: sqlite3.Connection, path: Path) -> str:
    """Inside the write lock: another process may have done it while we waited."""
    version = _usable_version(db, path)
    if version == SCHEMA_VERSION:
        return f"history database {path} (schema {version})"
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    fresh = not tables
    saved = None if fresh else backup(path, version)
    for table in TABLES:
        if table not in tables:
            _create_table(db, table)
            continue
        for name, kind in _missing_columns(db, table):
            db.execute(_add_column_sql(table, name, kind))
    for statement in INDEXES:
        db.execute(statement)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    if fresh:
        return f"created history database {path} (schema {SCHEMA_VERSION})"
    return (
        f"migrated history database {path} from schema {version} to {SCHEMA_VERSION}; the old file is kept as {saved}"
    )


def use_wal(db: sqlite3.Connection) -> None:
    """WAL: readers don't block the writer, and writers of several processes queue on the busy timeout.

    Switching a file to WAL needs it alone for a moment, and SQLite answers "database is locked" at
    once there instead of waiting the busy timeout; pages starting together retry until it is done."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection for export: it can never change what is stored."""
    if not path.exists():
        raise HistoryUnavailable(f"There is no history database at {path} yet (RCHAT_HISTORY_DB): nothing to export.")
    if not _is_sqlite(path):
        raise HistoryUnavailable(f"The history database {path} is not a SQLite file (damaged or something else).")
    db = _open_readonly(path)
    db.row_factory = sqlite3.Row
    return db


def _open_readonly(path: Path) -> sqlite3.Connection:
    # A read-only connection to a WAL database creates -wal and -shm files it cannot remove again.
    # With no -wal file, nobody is writing and every commit is in the main file: open it immutable,
    # which creates nothing. With one (the app is running), read through it as usual.
    wal = path.with_name(path.name + "-wal").exists()
    return sqlite3.connect(f"file:{os.fspath(path)}?mode=ro{'' if wal else '&immutable=1'}", uri=True)


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == SQLITE_HEADER
