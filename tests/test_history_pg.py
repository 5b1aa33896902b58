"""The history in PostgreSQL (RCHAT_DATABASE_URL): created, migrated, refused when unusable, and an
unreachable server worded as a damaged SQLite file is: history off, one line, the fix, no password.

On a real server that tests/pg_server.py starts for these tests (skipped, saying why, without Debian's
postgresql package).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from backend.qa import history_pg
from backend.qa.history_db import SCHEMA_VERSION, TABLES, HistoryUnavailable
from backend.qa.setup import history_problem, preflight, set_up
from backend.server.processes import free_port
from tests.conftest import make_settings
from tests.harness_cli import backend_cli, one_question, qa_run_cli
from tests.pg_server import new_database, throwaway_server


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    with throwaway_server() as server:
        yield server.url


@pytest.fixture
def url(pg_server: str) -> str:
    return new_database(pg_server)


def sql(url: str, *statements: str) -> list:
    async def run() -> list:
        db = await asyncpg.connect(url)
        try:
            return [await db.fetch(s) for s in statements]
        finally:
            await db.close()

    return asyncio.run(run())


def columns(url: str, table: str) -> set[str]:
    [rows] = sql(url, f"SELECT column_name FROM information_schema.columns WHERE table_name = '{table}'")
    return {r["column_name"] for r in rows}


def test_an_empty_database_gets_the_whole_schema_once(url: str) -> None:
    assert "will be created" in history_pg.inspect(url)
    assert "created" in history_pg.prepare(url)
    for table, wanted in TABLES.items():
        assert columns(url, table) == {name for name, _ in wanted}
    assert "(schema 1)" in history_pg.prepare(url) and "(schema 1)" in history_pg.inspect(url)
    [[row]] = sql(url, "SELECT value FROM rchat_meta WHERE name = 'schema_version'")
    assert row["value"] == str(SCHEMA_VERSION)


def test_an_older_schema_is_migrated_and_keeps_its_rows(url: str) -> None:
    history_pg.prepare(url)
    sql(
        url,
        'ALTER TABLE steps DROP COLUMN "modes"',
        "UPDATE rchat_meta SET value = '0'",
        """INSERT INTO threads (id, name) VALUES ('t1', 'old chat')""",
        """INSERT INTO steps (id, name, type, "threadId", output) VALUES ('s1', 'u', 'user_message', 't1', 'q')""",
    )
    assert "will be migrated from schema 0" in history_pg.inspect(url)
    assert "migrated" in history_pg.prepare(url)
    assert "modes" in columns(url, "steps")
    assert sql(url, "SELECT output FROM steps")[0][0]["output"] == "q"


def test_a_newer_schema_or_tables_made_by_something_else_are_refused_and_left_alone(url: str) -> None:
    history_pg.prepare(url)
    sql(url, f"UPDATE rchat_meta SET value = '{SCHEMA_VERSION + 1}'")
    with pytest.raises(HistoryUnavailable, match="newer version of this app"):
        history_pg.prepare(url)
    sql(url, "DROP TABLE rchat_meta")  # our tables, no version: Chainlit's own SQL, say, or another app
    with pytest.raises(HistoryUnavailable, match="did not make") as err:
        history_pg.inspect(url)
    assert "RCHAT_DATABASE_URL" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(HistoryUnavailable, match="did not make"):
        history_pg.prepare(url)
    assert sql(url, "SELECT to_regclass('rchat_meta') AS t")[0][0]["t"] is None  # nothing was created


@pytest.mark.parametrize("problem", ["no server", "no such database", "wrong password"])
def test_an_unreachable_database_turns_history_off_like_a_damaged_file(
    tmp_path: Path, pg_server: str, problem: str
) -> None:
    """The page's words for it are the damaged file's: "History is off: ... Answers in this chat are not saved." """
    host = pg_server.split("@", 1)[1].rsplit("/", 1)[0]
    bad = {
        "no server": f"postgresql://rchat:pw-s3cret@127.0.0.1:{free_port()}/x",
        "no such database": f"postgresql://rchat:pw-s3cret@{host}/no_such_db",
        "wrong password": f"postgresql://nobody:pw-s3cret@{host}/postgres",
    }[problem]
    settings = make_settings(tmp_path, data_dir=tmp_path, database_url=bad)
    said = history_problem(settings)
    assert said.startswith("History is off: Cannot reach the history database postgresql://")
    assert said.endswith("Answers in this chat are not saved.") and "RCHAT_DATABASE_URL" in said
    assert "pw-s3cret" not in said and "\n" not in said
    assert preflight(settings) == [f"warning: {history_problem(settings, change=False)}"]
    qa = set_up(settings)  # the page starts, with history off and its own auth secret file
    assert not qa.history and qa.history_off_reason == said
    assert (tmp_path / "auth-secret").exists()


def test_a_bad_url_setting_names_the_key_but_never_the_password(tmp_path: Path) -> None:
    from backend.settings import SettingsError

    with pytest.raises(SettingsError) as err:
        make_settings(tmp_path, database_url="mysql://rchat:pw-s3cret@db/x")
    assert "RCHAT_DATABASE_URL" in str(err.value) and "pw-s3cret" not in str(err.value)


def test_every_page_signs_logins_with_the_secret_kept_in_the_database(tmp_path: Path, url: str) -> None:
    from backend.page.history_layer import PostgresHistoryLayer, history_layer

    settings = make_settings(tmp_path, data_dir=tmp_path / "one", database_url=url)
    first = set_up(settings)
    other = set_up(make_settings(tmp_path, data_dir=tmp_path / "two", database_url=url))  # another machine
    assert first.history and other.history
    layer = history_layer(settings)  # the page's data layer on the same database
    assert isinstance(layer, PostgresHistoryLayer)
    asyncio.run(layer.close())
    [[row]] = sql(url, "SELECT value FROM rchat_meta WHERE name = 'auth_secret'")
    assert len(row["value"]) >= 32 and history_pg.keep_secret(url, "candidate") == row["value"]
    assert not (tmp_path / "one" / "auth-secret").exists() and not (tmp_path / "two" / "auth-secret").exists()


async def test_a_server_gone_while_the_page_runs_costs_the_write_not_the_chat() -> None:
    """The page's store says it once (backend/page/history_layer.py) and goes on; nothing is raised."""
    from backend.page.history_layer import PostgresHistoryLayer

    store = PostgresHistoryLayer(f"postgresql+asyncpg://rchat:pw@127.0.0.1:{free_port()}/x")
    assert await store.execute_sql("SELECT 1 AS one", {}) is None
    assert await store.get_user("alice") is None
    await store.close()


async def test_the_page_writes_again_by_itself_once_a_restarted_server_is_back() -> None:
    from backend.page.history_layer import PostgresHistoryLayer

    with throwaway_server() as server:  # a server of its own, to stop
        history_pg.prepare(server.url)
        store = PostgresHistoryLayer("postgresql+asyncpg://" + server.url.split("://", 1)[1])
        assert await store.execute_sql("SELECT 1 AS one", {}) == [{"one": 1}]
        server.stop()
        assert await store.execute_sql("SELECT 1 AS one", {}) is None  # this write is lost, and said so
        server.start()
        assert await store.execute_sql("SELECT 1 AS one", {}) == [{"one": 1}]
        await store.close()


def test_votes_stored_in_postgresql_reach_the_board_and_the_preference_export(url: str, tmp_path: Path) -> None:
    """Compare's readers (the board, `export --votes`) read the same PostgreSQL history as the page."""
    from backend.qa.compare.battles import battles_from_records, load_battle_records
    from backend.qa.export import history_source
    from backend.records import RECORD_KEY

    history_pg.prepare(url)
    battle = {
        "kind": "battle",
        "version": 1,
        "id": "b1",
        "question": "Q?",
        "contenders": {"A": "x", "B": "y"},
        "answers": {
            "A": {"answer": "one", "stamp": {"request": {"messages": [{"role": "user", "content": "Q?"}]}}},
            "B": {"answer": "two", "stamp": {}},
        },
        "vote": "a",
        "reasons": [],
        "comment": "",
        "user": "u",
    }
    sql(
        url,
        "INSERT INTO threads (id, \"createdAt\", name) VALUES ('t1', '2026-12-07T00:00:00Z', 'chat')",
        "INSERT INTO steps (id, name, type, \"threadId\", \"createdAt\", metadata, output) VALUES ('s1', 'm', "
        f"'assistant_message', 't1', '2026-12-07T00:00:01Z', '{json.dumps({RECORD_KEY: battle})}', '')",
    )
    source = history_source(make_settings(tmp_path, database_url=url))
    [stored] = load_battle_records(source)
    assert [(b.a, b.b, b.winner) for b in battles_from_records([stored])] == [("x", "y", "a")]
    done = backend_cli({"RCHAT_DATABASE_URL": url, "RCHAT_DATA_DIR": str(tmp_path)}, "export", "--votes")
    assert done.returncode == 0, done.stderr
    [line] = [json.loads(x) for x in done.stdout.splitlines()]
    assert line["chosen"] == [{"role": "assistant", "content": "one"}] and line["chosen_model"] == "x"


def test_an_accuracy_run_stores_its_answers_in_postgresql(url: str, tmp_path: Path, fake_server_url: str) -> None:
    """`qa run` writes its chat where the page does: PostgreSQL with RCHAT_DATABASE_URL (the fake server
    answers; its keyed answer is scripted)."""
    from backend.qa.export import load_records
    from backend.qa.history_pg import PgHistory

    env = {
        "RCHAT_DATABASE_URL": url,
        "RCHAT_BASE_URL": fake_server_url,
        "RCHAT_DATA_DIR": str(tmp_path),
        "RCHAT_LOG_DIR": str(tmp_path),
    }
    done = qa_run_cli(env, one_question(tmp_path), tmp_path / "results")
    assert done.returncode == 0, done.stdout + done.stderr
    records = load_records(PgHistory(url))
    assert len(records) == 2 and {r["verdict"]["outcome"] for r in records} == {"correct"}
    assert not (tmp_path / "history.sqlite3").exists()  # nothing went to a local file instead
