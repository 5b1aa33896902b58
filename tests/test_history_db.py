"""The history database file: created, migrated from an older schema, and refused when unusable.

All on real SQLite files. "Refused" must leave the file byte for byte as it was.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from backend.qa.history_db import SCHEMA_VERSION, TABLES, HistoryUnavailable, prepare

# The schema as Chainlit's docs gave it before steps had `command`, `modes`, `autoCollapse` and
# `defaultOpen` (user_version 0), with one old chat in it.
OLDER_SCHEMA = (Path(__file__).parent / "data" / "history-schema-0.sql").read_text()


def columns(path: Path, table: str) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def test_a_new_file_gets_the_whole_schema(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "history.sqlite3"
    assert "created" in prepare(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    for table, wanted in TABLES.items():
        assert columns(path, table) == {name for name, _ in wanted}
    assert "schema 1" in prepare(path)  # a second start changes nothing


def test_an_older_schema_is_migrated_after_a_backup_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(OLDER_SCHEMA)
    said = prepare(path)
    assert "migrated" in said and "schema 0" in said
    assert {"command", "modes", "autoCollapse", "defaultOpen"} <= columns(path, "steps")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT output FROM steps WHERE id = 's1'").fetchone() == ("an old question",)
    backup = tmp_path / "history.sqlite3.schema-v0.bak"
    with sqlite3.connect(backup) as db:
        assert db.execute("SELECT name FROM threads").fetchall() == [("old chat",)]
    assert {"command", "modes"}.isdisjoint(columns(backup, "steps"))  # the backup is the old schema


def test_a_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    prepare(path)
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = path.read_bytes()
    with pytest.raises(HistoryUnavailable, match="newer version of this app"):
        prepare(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [b"this is not a database at all\n" * 40, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_damaged_file_is_refused_with_a_message_and_left_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "history.sqlite3"
    path.write_bytes(content)
    with pytest.raises(HistoryUnavailable) as err:
        prepare(path)
    assert str(path) in str(err.value) and "RCHAT_HISTORY_DB" in str(err.value)
    assert "\n" not in str(err.value)
    assert path.read_bytes() == content


def test_a_read_only_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    prepare(path)
    path.chmod(0o444)
    before = path.read_bytes()
    with pytest.raises(HistoryUnavailable, match=r"read-only.*chmod u\+w"):
        prepare(path)
    assert path.read_bytes() == before


async def test_many_writes_at_once_all_land_in_order_and_a_read_after_them_sees_them(tmp_path: Path) -> None:
    """The page's data layer runs every statement in one thread of its own (backend/qa/history_store.py):
    64 answers' writes at once must all land, each step's last write must win, and a failed
    statement must leave the store usable."""
    from backend.page.history_layer import SqliteHistoryLayer

    path = tmp_path / "history.sqlite3"
    prepare(path)
    store = SqliteHistoryLayer(path)
    upsert = (
        'INSERT INTO steps ("id", "threadId", "name", "type", "output") VALUES (:id, :t, :name, :type, :output) '
        'ON CONFLICT (id) DO UPDATE SET "output" = :output'
    )
    writes = [
        store.execute_sql(
            upsert,
            {"id": f"s{i % 64}", "t": "t1", "name": "a", "type": "assistant_message", "output": f"version {i // 64}"},
        )
        for i in range(64 * 4)
    ]
    assert await asyncio.gather(*writes) == [1] * len(writes)
    rows = await store.execute_sql('SELECT "id", "output" FROM steps ORDER BY "id"', {})
    assert len(rows) == 64 and {r["output"] for r in rows} == {"version 3"}
    assert await store.execute_sql("SELECT * FROM no_such_table", {}) is None  # said once, not raised
    assert await store.execute_sql("SELECT COUNT(*) AS n FROM steps", {}) == [{"n": 64}]
    await store.close()
