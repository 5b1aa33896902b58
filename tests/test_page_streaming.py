"""What a user sees while an answer streams, now that the page takes shortcuts for speed (issue 18):
the answer is stored while it streams (partial saves run beside the stream) and Stop still reaches
the server. The server is the benchmark's fast fake (backend/bench/fast_server.py), here slowed to
100 tokens/s so that an answer lasts long enough to look at mid-stream; vLLM can't be paced."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import httpx
import pytest

from backend.bench.chainlit_client import ChainlitSession, UiAnswer
from backend.bench.fast_server import fast_server
from backend.bench.ui_load import run_ui
from backend.qa.export import load_records
from tests.conftest import free_port
from tests.ui_harness import chainlit_app


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory) -> str:
    with fast_server(port=free_port(), log_dir=tmp_path_factory.mktemp("fast"), rate=100, ttft=0.05) as url:
        yield url


@pytest.fixture(scope="module")
def page(slow_server: str, tmp_path_factory) -> tuple[str, Path]:
    ui_dir = tmp_path_factory.mktemp("stream-ui")
    env = {"RCHAT_BASE_URL": slow_server, "RCHAT_DEFAULT_MAX_TOKENS": "400", "RCHAT_PERSIST_INTERVAL": "0.5"}
    with chainlit_app(ui_port=free_port(), log_dir=ui_dir, env=env, timeout=300) as url:  # a busy shared host
        yield url, ui_dir / "data" / "history.sqlite3"


async def _until(predicate, timeout: float = 60) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


def _in_progress(db: Path, thread_id: str) -> list[str]:
    """Answer texts stored as still in progress for this chat."""
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT output, metadata FROM steps WHERE \"threadId\" = ? AND type = 'assistant_message'", (thread_id,)
        ).fetchall()
    return [out for out, meta in rows if meta and '"in progress"' in meta and out]


async def test_an_answer_is_stored_while_it_streams_and_complete_at_the_end(page) -> None:
    url, db = page
    async with ChainlitSession(url) as session:
        session.current = answer = UiAnswer(sent_at=0)
        before = session._task_ends
        await session.send("Tell me a long story.")
        await _until(lambda: len(answer.token_times) >= 10)
        await _until(lambda: session.thread_id and _in_progress(db, session.thread_id), timeout=30)
        partial = _in_progress(db, session.thread_id)[0]
        await session._wait_task_ends(before + 1, timeout=60)
        thread_id = session.thread_id
    assert "tok" in partial and partial.count("tok") < 400  # part of the answer, saved before its end
    [record] = load_records(db, thread_id=thread_id)
    assert record["outcome"] == "complete" and record["answer"].count("tok") == 400


async def test_stop_mid_answer_cancels_the_request_on_the_server(page, slow_server: str) -> None:
    url, _db = page
    before = httpx.get(f"{slow_server}/stats").json()
    async with ChainlitSession(url) as session:
        session.current = answer = UiAnswer(sent_at=0)
        ended = session._task_ends
        await session.send("Another long story, please.")
        await _until(lambda: len(answer.token_times) >= 5)
        await session.sio.emit("stop")
        await session._wait_task_ends(ended + 1, timeout=30)
        said = json.dumps(session.messages)
    await _until(lambda: httpx.get(f"{slow_server}/stats").json()["cancelled"] > before["cancelled"], timeout=10)
    assert "Stopped by you." in said


def test_the_benchmark_spreads_page_sessions_over_client_processes(page) -> None:
    """`python -m backend.bench --streams-per-process 2` at 4 sessions: two client processes, every session
    answered in full, one clock for both (the wall covers every answer, not one process's)."""
    url, _ = page
    records, wall = run_ui(url, "Tell me a long story.", concurrency=4, repeat=1, per_process=2)
    assert len(records) == 4 and not [r.error for r in records if r.error]
    assert all(r.tokens == 400 for r in records)
    first, last = min(r.sent_at for r in records), max(r.arrivals[-1] for r in records)
    assert wall >= (last - first) * 0.9 and wall >= 3.5  # 400 tokens at 100 tokens/s each
