"""Bad input over the page's websocket (what a browser can't easily send): empty, control chars, bursts."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from backend.bench.chainlit_client import ChainlitSession
from backend.qa.export import load_records
from tests.conftest import free_port
from tests.ui_harness import chainlit_app


@pytest.fixture(scope="module")
def ui_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sock-ui")


@pytest.fixture(scope="module")
def fake_ui(fake_server_url: str, ui_dir: Path):
    """The real app on the fake server (its answers take ~2 s, long enough to send a burst into)."""
    env = {
        "RCHAT_BASE_URL": fake_server_url,
        # a small context, so that a few turns overflow it
        "RCHAT_MAX_MODEL_LEN": "1500",
        "RCHAT_DEFAULT_MAX_TOKENS": "200",
    }
    with chainlit_app(ui_port=free_port(), log_dir=ui_dir, env=env) as url:
        yield url


def texts(answer) -> str:
    return "\n".join(answer.texts.values())


async def test_empty_message_gets_a_friendly_answer(fake_ui: str) -> None:
    async with ChainlitSession(fake_ui) as session:
        answer = await session.ask("   ", timeout=30)
        assert "Your message is empty" in texts(answer)
        answer = await session.ask("THINK", timeout=30)  # the session still works
        assert "The bigger number is **9.8**." in texts(answer)


async def test_control_characters_are_removed_and_said(fake_ui: str) -> None:
    async with ChainlitSession(fake_ui) as session:
        answer = await session.ask("THINK\x00\x07 please", timeout=30)
        assert "2 control character(s) were removed" in texts(answer)
        assert "9.8" in texts(answer)


async def test_a_burst_while_answering_is_told_to_wait_and_nothing_crashes(fake_ui: str) -> None:
    async with ChainlitSession(fake_ui) as session:
        await session.send("THINK")
        await asyncio.sleep(0.5)
        for _ in range(3):
            await session.send("FIELD")

        def said() -> str:
            return "\n".join(m.get("output", "") for m in session.messages)

        for _ in range(120):  # the first answer finishes undisturbed
            if "finish: stop" in said():
                break
            await asyncio.sleep(0.25)
        said = said()
        assert "The bigger number is **9.8**." in said
        assert said.count("Still answering your previous message") == 3
        assert "Traceback" not in said
        answer = await session.ask("FIELD", timeout=30)
        assert "9.8 is bigger." in texts(answer)


async def test_the_user_is_told_when_old_turns_are_left_out(fake_ui: str) -> None:
    async with ChainlitSession(fake_ui) as session:
        for i in range(4):
            answer = await session.ask(f"FIELD {i} " + "long context " * 100, timeout=30)
        assert "oldest message(s) were left out" in texts(answer)
        assert "9.8 is bigger." in texts(answer)


async def test_a_one_megabyte_message_gets_a_clear_answer_and_the_session_lives(fake_ui: str) -> None:
    async with ChainlitSession(fake_ui) as session:
        answer = await session.ask("x" * (1024 * 1024), timeout=60)
        assert "the limit is 16,000" in texts(answer)
        answer = await session.ask("FIELD", timeout=30)
        assert "9.8 is bigger." in texts(answer)


async def test_binary_junk_and_invalid_utf8_are_cleaned_answered_and_stored(fake_ui: str, ui_dir: Path) -> None:
    """Every byte value, unpaired surrogates (what invalid UTF-8 becomes in a JSON string) and
    a NUL: the user is told what was removed, gets an answer, and the history keeps the question."""
    junk = bytes(range(256)).decode("latin-1") + " \ud800 \udfff\ud83d end"
    async with ChainlitSession(fake_ui) as session:
        answer = await session.ask("FIELD " + junk, timeout=30)
        said = texts(answer)
        assert "control character(s) were removed" in said and "9.8 is bigger." in said
        assert "could not be saved" not in said and "Traceback" not in said
        thread_id = session.thread_id
    db = ui_dir / "data" / "history.sqlite3"
    [record] = load_records(db, thread_id=thread_id)
    assert record["outcome"] == "complete" and record["question"].startswith("FIELD ")
    assert record["question"].endswith(" end") and "\x00" not in record["question"]
    with sqlite3.connect(db) as con:  # the user's own message step, as the sidebar will show it
        [(shown,)] = con.execute(
            "SELECT output FROM steps WHERE \"threadId\" = ? AND type = 'user_message'", (thread_id,)
        ).fetchall()
    assert shown.startswith("FIELD ") and shown.endswith(" end") and "\ufffd" in shown


async def test_a_history_database_broken_while_running_is_said_once_and_the_chat_goes_on(
    fake_server_url: str, tmp_path: Path
) -> None:
    """Someone removes the tables under the running app (as a bad restore or a full disk would break
    writes): the user is told once that saving failed, and still gets every answer on the page."""
    env = {"RCHAT_BASE_URL": fake_server_url, "RCHAT_DEFAULT_MAX_TOKENS": "200"}
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path, env=env) as url:
        async with ChainlitSession(url) as session:
            assert "9.8 is bigger." in texts(await session.ask("FIELD", timeout=30))
            with sqlite3.connect(tmp_path / "data" / "history.sqlite3") as con:
                con.execute("DROP TABLE steps")
            first = texts(await session.ask("FIELD", timeout=30))
            second = texts(await session.ask("FIELD", timeout=30))
    assert "could not be saved to the history database" in first and "Export chat" in first
    assert "9.8 is bigger." in first and "9.8 is bigger." in second
    assert "could not be saved" not in second  # once per chat, not on every write
