"""A refresh loses nothing: a reloaded tab, a second tab and a restarted page all show the answer.

Against the fake server of tests/fake_openai_server.py: its SLOW answer streams 40 words over about
10 s, long enough to reload, open a second tab or kill the page in the middle of it.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from backend.qa.export import load_records
from tests.conftest import free_port
from tests.test_chat_page import shot, wait_for
from tests.ui_harness import answers, browser_page, chainlit_app, send

pytestmark = [pytest.mark.browser]


@pytest.fixture
def app(fake_server_url: str, tmp_path: Path):
    env = {"RCHAT_BASE_URL": fake_server_url, "RCHAT_PERSIST_INTERVAL": "1"}
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path, env=env) as url:
        yield url, tmp_path / "data" / "history.sqlite3"


def last_answer(page) -> str:
    try:
        return (answers(page) or [""])[-1]
    except Exception:  # noqa: BLE001 - the page is navigating (a thread opening): ask again
        return ""


def words(page) -> int:
    return sum(1 for w in last_answer(page).split() if w.startswith("word"))


def test_a_reloaded_tab_shows_the_answer_so_far_and_streams_it_to_the_end(app) -> None:
    url, history = app
    with browser_page(url, screenshot=shot("follow-reloaded")) as page:
        send(page, "SLOW: count for me")
        wait_for(lambda: words(page) >= 5 and "/thread/" in page.url, timeout=30)
        page.reload()
        wait_for(lambda: words(page) >= 8, timeout=30)  # the answer so far, then more of it live
        seen = words(page)
        wait_for(lambda: "finish: stop" in last_answer(page), timeout=40)
        assert words(page) == 40 and seen < 40
    [record] = load_records(history)
    assert record["outcome"] == "complete" and record["answer"].split()[-1] == "word40"


def test_a_second_tab_follows_and_its_stop_stops_the_answer(app) -> None:
    url, history = app
    with browser_page(url) as first:
        send(first, "SLOW: count again")
        wait_for(lambda: words(first) >= 3 and "/thread/" in first.url, timeout=30)
        second = first.context.browser.new_page()  # another tab, which opens the chat from the sidebar
        second.goto(url)
        second.locator("#thread-history").get_by_text("SLOW: count again").first.click(timeout=30_000)
        wait_for(lambda: words(second) >= 5, timeout=30)
        second.locator("#stop-button").click(timeout=20_000)
        wait_for(lambda: "Stopped by you." in last_answer(second), timeout=30)
        wait_for(lambda: "Stopped by you." in last_answer(first), timeout=30)
    [record] = load_records(history)
    assert record["outcome"] == "stopped" and 3 <= len(record["answer"].split()) < 40


def test_an_answer_whose_page_process_died_is_kept_and_marked_interrupted(fake_server_url: str, tmp_path: Path) -> None:
    port, env = free_port(), {"RCHAT_BASE_URL": fake_server_url, "RCHAT_PERSIST_INTERVAL": "1"}
    with chainlit_app(ui_port=port, log_dir=tmp_path, env=env) as url, browser_page(url) as page:
        send(page, "SLOW: count until you are cut off")
        wait_for(lambda: words(page) >= 8, timeout=30)
        thread_url = page.url
        os.kill(_page_pid(port), signal.SIGKILL)  # the page process dies mid-answer
    with chainlit_app(ui_port=port, log_dir=tmp_path, env={**env, "RCHAT_PERSIST_INTERVAL": "0.5"}) as url:
        with browser_page(url, screenshot=shot("follow-interrupted")) as page:
            page.goto(thread_url)
            wait_for(lambda: "interrupted" in last_answer(page), timeout=60)
            assert words(page) >= 4
    [record] = load_records(tmp_path / "data" / "history.sqlite3")
    assert record["outcome"] == "interrupted" and record["answer"].startswith("word1")


def _page_pid(port: int) -> int:
    import psutil

    for conn in psutil.net_connections(kind="tcp"):
        if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
            return conn.pid
    raise AssertionError(f"no process listens on {port}")
