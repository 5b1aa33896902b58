"""One history for N page processes: separate OS processes start and write at once, nothing is lost.

Each writer (tests/history_writer.py) starts as a page does, all at the same moment on a database that
does not exist yet, logs the same user in, and streams its answers into the history through the real
data layer. Afterwards every chat and every answer's last version is there, no write failed (no
"database is locked" reached a user), and all of them sign logins with the same secret. The same
tests run on the SQLite file (one machine) and on PostgreSQL (RCHAT_DATABASE_URL, several machines),
a real server that tests/pg_server.py starts for them.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chainlit.context import init_http_context
from chainlit.types import Feedback, Pagination, ThreadFilter
from chainlit.user import User

from backend.page.history_layer import HistoryLayer, PostgresHistoryLayer, SqliteHistoryLayer
from backend.qa import history_pg
from backend.qa.export import load_records
from backend.qa.history_db import prepare
from backend.settings import PROJECT_ROOT
from tests.pg_server import new_database, throwaway_server

WRITERS, THREADS, STEPS, UPDATES = 4, 6, 3, 5


def run_writers(folder: Path, env: dict[str, str]) -> list[str]:
    """Start WRITERS processes, let them go together once all are up; their outputs."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.history_writer", str(folder), str(w), str(THREADS), str(STEPS), str(UPDATES)],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for w in range(WRITERS)
    ]
    deadline = time.monotonic() + 120
    while len(list(folder.glob("ready-*"))) < WRITERS and time.monotonic() < deadline:
        time.sleep(0.05)
    (folder / "go").touch()
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outputs, strict=True):
        assert p.returncode == 0, out
    return outputs


async def stored(store: HistoryLayer) -> tuple[int, dict[str, str], int]:
    threads = await store.execute_sql("SELECT COUNT(*) AS n FROM threads", {})
    steps = await store.execute_sql('SELECT "id", "output" FROM steps', {})
    users = await store.execute_sql("SELECT COUNT(*) AS n FROM users", {})
    await store.close()
    return threads[0]["n"], {row["id"]: row["output"] for row in steps}, users[0]["n"]


def check_everything_landed(outputs: list[str], counts: tuple[int, dict[str, str], int]) -> None:
    for out in outputs:
        assert "failures 0 " in out and "database is locked" not in out and "history database error" not in out, out
    assert len({line for out in outputs for line in out.splitlines() if line.startswith("secret ")}) == 1
    threads, steps, users = counts
    assert threads == WRITERS * THREADS and users == 1
    assert len(steps) == WRITERS * THREADS * STEPS
    assert set(steps.values()) == {f"version {UPDATES - 1}"}  # each answer's last save won


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    with throwaway_server() as server:
        yield server.url


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> dict:
    """Where the history is: `env` for a page process, `store()` for the test's own data layer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RCHAT_")}
    if request.param == "sqlite":
        path = tmp_path / "data" / "history.sqlite3"
        return {"env": env, "store": lambda: SqliteHistoryLayer(path), "prepare": lambda: prepare(path), "source": path}
    url = new_database(request.getfixturevalue("pg_server"))
    asyncpg_url = "postgresql+asyncpg://" + url.split("://", 1)[1]
    return {
        "env": {**env, "RCHAT_DATABASE_URL": url},
        "store": lambda: PostgresHistoryLayer(asyncpg_url),
        "prepare": lambda: history_pg.prepare(url),
        "source": history_pg.PgHistory(url),
    }


def test_processes_writing_one_history_at_once_lose_nothing(history: dict, tmp_path: Path) -> None:
    outputs = run_writers(tmp_path, history["env"])
    assert "schema 1" in history["prepare"]()
    check_everything_landed(outputs, asyncio.run(stored(history["store"]())))
    if "RCHAT_DATABASE_URL" in history["env"]:
        assert not (tmp_path / "data" / "auth-secret").exists()  # the secret is in the database


PREPARE_WHEN_TOLD = """
import sys, time
from pathlib import Path
folder = Path(sys.argv[1])
from backend.qa.history_db import prepare
(folder / f"ready-{sys.argv[2]}").touch()
while not (folder / "go").exists():
    time.sleep(0.005)
print(prepare(folder / "history.sqlite3"))
"""


def test_pages_starting_together_migrate_an_older_file_once(tmp_path: Path) -> None:
    """Every page prepares the database at start: on a file of an older schema, one migrates (after one
    backup) while the others wait for its write lock and then find the schema current."""
    with sqlite3.connect(tmp_path / "history.sqlite3") as db:
        db.executescript((Path(__file__).parent / "data" / "history-schema-0.sql").read_text())
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PREPARE_WHEN_TOLD, str(tmp_path), str(w)],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for w in range(WRITERS)
    ]
    while len(list(tmp_path.glob("ready-*"))) < WRITERS:
        time.sleep(0.01)
    (tmp_path / "go").touch()
    said = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), said
    assert sum("migrated" in s for s in said) == 1 and sum("(schema 1)" in s for s in said) == WRITERS - 1, said
    assert [b.name for b in tmp_path.glob("*.bak")] == ["history.sqlite3.schema-v0.bak"]


async def test_a_chat_is_stored_listed_resumed_rated_and_deleted(history: dict) -> None:
    """Chainlit's own SQL, as the page runs it, on our schema: the same in both databases."""
    history["prepare"]()
    store = history["store"]()
    init_http_context()
    user = await store.create_user(User(identifier="alice", metadata={"role": "qa"}))
    assert (await store.create_user(User(identifier="alice"))).id == user.id  # a second login finds her
    await store.update_thread("t1", name="first chat", user_id=user.id, metadata={"k": [1]}, tags=["x"])
    for i, (kind, text) in enumerate([("user_message", "2+2?"), ("assistant_message", "4 \ud800")]):
        await store.create_step(
            {
                "id": f"s{i}",
                "threadId": "t1",
                "name": "n",
                "type": kind,
                "output": text,
                "streaming": False,
                "isError": False,
                "indent": 0,
                "tags": ["t"],
                "metadata": {"rchat": {"kind": "answer"}},
                "createdAt": f"2026-12-08T00:00:0{i}Z",
                "showInput": "json",
                "defaultOpen": False,
            }
        )
    listed = await store.list_threads(Pagination(first=10), ThreadFilter(userId=user.id))
    assert [t["id"] for t in listed.data] == ["t1"]
    thread = await store.get_thread("t1")
    assert thread["metadata"] == {"k": [1]} and thread["tags"] == ["x"]
    assert [(s["output"], s["metadata"]) for s in thread["steps"]] == [
        ("2+2?", {"rchat": {"kind": "answer"}}),
        ("4 \ufffd", {"rchat": {"kind": "answer"}}),
    ]
    feedback_id = await store.upsert_feedback(Feedback(forId="s1", value=1, comment="right", threadId="t1"))
    await store.upsert_feedback(Feedback(id=feedback_id, forId="s1", value=0, threadId="t1"))
    step = await store.get_step("s1")
    assert (step["feedback"]["value"], step["feedback"]["comment"]) == (0, "")
    records = await asyncio.to_thread(load_records, history["source"], user="alice")  # export, replay
    assert [(r["answer_id"], r["thread_name"], r["human_verdict"]["verdict"]) for r in records] == [
        ("s1", "first chat", "wrong")
    ]
    assert await asyncio.to_thread(load_records, history["source"], thread_id="t2") == []
    await store.delete_thread("t1")
    assert await store.get_thread("t1") is None
    await store.close()


async def test_many_writes_at_once_all_land_and_a_failed_statement_leaves_the_store_usable(history: dict) -> None:
    history["prepare"]()
    store = history["store"]()
    upsert = (
        'INSERT INTO steps ("id", "threadId", "name", "type", "output") VALUES (:id, :t, :name, :type, :output) '
        'ON CONFLICT (id) DO UPDATE SET "output" = :output'
    )
    await store.execute_sql('INSERT INTO threads ("id") VALUES (:id)', {"id": "t1"})  # PostgreSQL checks the key
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
