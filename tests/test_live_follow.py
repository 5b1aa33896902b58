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
from tests.ui_harness import answers, browser_page, chainlit_app, send, shot, wait_for

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


def test_a_dropped_connection_gets_back_every_word_in_order(app) -> None:
    url, _ = app
    with browser_page(url) as page:
        send(page, "SLOW: count through a network drop")
        wait_for(lambda: words(page) >= 4, timeout=30)
        page.context.set_offline(True)  # the socket drops; tokens streamed meanwhile never arrive
        page.wait_for_timeout(2500)
        page.context.set_offline(False)
        wait_for(lambda: "finish: stop" in last_answer(page), timeout=60)
        said = [w for w in last_answer(page).split() if w.startswith("word")]
        assert said == [f"word{i}" for i in range(1, 41)]


@pytest.fixture(scope="module")
def balanced(fake_server_url: str, tmp_path_factory):
    """`python -m backend run` with two page processes behind HAProxy, shared by the tests through it
    (each asks its own question); yields it and its history database."""
    from tests.harness_cli import BalancedService

    folder = tmp_path_factory.mktemp("balanced")
    with BalancedService(folder, fake_server_url) as service:
        service.wait_for("chat ready at")
        yield service, folder / "data" / "history.sqlite3"


def open_on_the_other_process(page, url: str, question: str):
    """A second browser (its own cookies) opens the chat from the sidebar: HAProxy's least-busy pick puts it
    on the page process that is not streaming the answer, which is checked on the balancer's cookie."""
    from backend.server.balancer import COOKIE

    other = page.context.browser.new_page()
    other.goto(url)
    other.locator("#thread-history").get_by_text(question).first.click(timeout=30_000)
    mine = {c["name"]: c["value"] for c in page.context.cookies()}[COOKIE]
    theirs = {c["name"]: c["value"] for c in other.context.cookies()}[COOKIE]
    assert mine != theirs  # the second browser really is on the other process
    return other


def test_through_the_balancer_a_tab_on_the_other_page_process_follows_the_saves(balanced) -> None:
    """Two page processes behind HAProxy: a reload stays on its process and joins the answer there; a
    second browser lands on the other process, which follows the answer through its saves."""
    service, _ = balanced
    with browser_page(service.url, screenshot=shot("follow-balanced")) as page:
        send(page, "SLOW: count on two processes")
        wait_for(lambda: words(page) >= 4 and "/thread/" in page.url, timeout=30)
        page.reload()
        wait_for(lambda: words(page) >= 8, timeout=30)
        other = open_on_the_other_process(page, service.url, "SLOW: count on two processes")
        wait_for(lambda: "finish: stop" in last_answer(page), timeout=60)
        wait_for(lambda: words(other) == 40 and "finish: stop" in last_answer(other), timeout=60)


def test_through_the_balancer_a_chat_opened_before_its_first_save_follows_the_answer(balanced) -> None:
    """The other page process opens the chat while its answer still thinks, so nothing of the answer
    is stored yet (only the question): it follows the answer anyway, thinking and words, to the end."""
    service, _ = balanced
    question = "PONDER: think before you count"
    with browser_page(service.url, screenshot=shot("follow-before-save")) as page:
        send(page, question)
        page.get_by_text("step2").first.wait_for(timeout=30_000)  # it thinks
        other = open_on_the_other_process(page, service.url, question)
        wait_for(lambda: words(other) == 8 and "finish: stop" in last_answer(other), timeout=60)
        assert other.get_by_text("Thought for").count() >= 1  # its thinking came along


def test_through_the_balancer_stop_in_a_tab_on_the_other_process_stops_the_answer(balanced) -> None:
    """Stop pressed in a tab that follows the answer from the other page process stops it where it
    streams (at its next save): both tabs and the history show it stopped, cut short."""
    service, history = balanced
    question = "MARATHON: count until the other process stops you"
    with browser_page(service.url, screenshot=shot("follow-stop-elsewhere")) as page:
        send(page, question)
        wait_for(lambda: words(page) >= 3 and "/thread/" in page.url, timeout=30)
        other = open_on_the_other_process(page, service.url, question)
        wait_for(lambda: words(other) >= 1, timeout=30)  # it follows
        other.locator("#stop-button").click(timeout=20_000)
        wait_for(lambda: "Stopped by you." in last_answer(page), timeout=30)
        wait_for(lambda: "Stopped by you." in last_answer(other), timeout=30)
    [record] = [r for r in load_records(history) if r["question"] == question]
    assert record["outcome"] == "stopped" and 3 <= len(record["answer"].split()) < 120


@pytest.mark.server
def test_on_the_real_server_a_reloaded_tab_follows_the_answer_to_its_end(vllm_server, tmp_path: Path) -> None:
    env = {
        "RCHAT_VLLM_PORT": str(vllm_server.settings.vllm_port),
        "RCHAT_API_KEY": vllm_server.api_key,
        "RCHAT_PERSIST_INTERVAL": "1",
        "RCHAT_DEFAULT_MAX_TOKENS": "400",
        "RCHAT_DEFAULT_TEMPERATURE": "0",
    }
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path, env=env) as url:
        with browser_page(url, screenshot=shot("follow-real")) as page:
            send(page, "Write a long story about a lighthouse keeper and her cat.")
            wait_for(lambda: len(last_answer(page)) > 40 and "/thread/" in page.url, timeout=120)
            page.reload()
            wait_for(lambda: len(last_answer(page)) > 40, timeout=60)
            before = len(last_answer(page))
            wait_for(lambda: "finish:" in last_answer(page), timeout=300)
            assert len(last_answer(page)) > before
    [record] = load_records(tmp_path / "data" / "history.sqlite3")
    assert record["outcome"] == "complete" and record["answer"].strip() in last_answer_text(record)


def last_answer_text(record: dict) -> str:
    return record["shown"]
