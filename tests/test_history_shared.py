"""One history for N page processes: separate OS processes start and write at once, nothing is lost.

Each writer (tests/history_writer.py) starts as a page does, all at the same moment on a database that
does not exist yet, logs the same user in, and streams its answers into the history through the real
data layer. Afterwards every chat and every answer's last version is there, no write failed (no
"database is locked" reached a user), and all of them sign logins with the same secret.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from backend.qa.history_db import prepare
from backend.qa.history_store import HistoryStore
from backend.settings import PROJECT_ROOT

WRITERS, THREADS, STEPS, UPDATES = 4, 6, 3, 5


def run_writers(folder: Path, env: dict[str, str]) -> list[str]:
    """Start WRITERS processes, let them go together once all are up; their outputs."""
    procs = [subprocess.Popen([sys.executable, "-m", "tests.history_writer", str(folder), str(w),
                               str(THREADS), str(STEPS), str(UPDATES)], cwd=PROJECT_ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for w in range(WRITERS)]
    deadline = time.monotonic() + 120
    while len(list(folder.glob("ready-*"))) < WRITERS and time.monotonic() < deadline:
        time.sleep(0.05)
    (folder / "go").touch()
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out
    return outputs


async def stored(store: HistoryStore) -> tuple[int, dict[str, str], int]:
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


def test_processes_writing_one_sqlite_file_at_once_lose_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RCHAT_")}
    outputs = run_writers(tmp_path, env)
    path = tmp_path / "data" / "history.sqlite3"
    assert "schema 1" in prepare(path)
    check_everything_landed(outputs, asyncio.run(stored(HistoryStore(path))))


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
    from tests.test_history_db import OLDER_SCHEMA

    with sqlite3.connect(tmp_path / "history.sqlite3") as db:
        db.executescript(OLDER_SCHEMA)
    procs = [subprocess.Popen([sys.executable, "-c", PREPARE_WHEN_TOLD, str(tmp_path), str(w)], cwd=PROJECT_ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for w in range(WRITERS)]
    while len(list(tmp_path.glob("ready-*"))) < WRITERS:
        time.sleep(0.01)
    (tmp_path / "go").touch()
    said = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), said
    assert sum("migrated" in s for s in said) == 1 and sum("(schema 1)" in s for s in said) == WRITERS - 1, said
    assert [b.name for b in tmp_path.glob("*.bak")] == ["history.sqlite3.schema-v0.bak"]
