"""Booth mode and the live strip in real Chromium, on the real vLLM server (the fake only where it must)."""

from __future__ import annotations

import json
import sqlite3
import time
from urllib.parse import urlparse

import pytest

from backend.qa.accounts import LOCAL_USER, hash_password
from tests.conftest import SharedServer, free_port
from tests.ui_harness import answers, browser_page, chainlit_app, running_requests, send, shot, wait_for

pytestmark = [pytest.mark.browser]
LONG_QUESTION = "Write a long story about a dragon who learns to count. Use at least 400 words."


def booth_env(server: SharedServer, **extra: str) -> dict[str, str]:
    # A password user is configured on purpose: a booth must still show no login form.
    return {
        "RCHAT_VLLM_PORT": str(urlparse(server.url).port),
        "RCHAT_API_KEY": server.api_key,
        "RCHAT_DEFAULT_TEMPERATURE": "0",
        "RCHAT_DEFAULT_MAX_TOKENS": "120",
        "RCHAT_KIOSK": "true",
        "RCHAT_USERS": json.dumps({"alice": hash_password("secret")}),
        **extra,
    }


@pytest.fixture(scope="module")
def booth_app(vllm_server: SharedServer, tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("booth")
    # 400 tokens: the answer must outlast several of the strip's 2 s refreshes on a fast host too
    env = booth_env(vllm_server, RCHAT_KIOSK_IDLE_SECONDS="4", RCHAT_DEFAULT_MAX_TOKENS="400")
    with chainlit_app(ui_port=free_port(), log_dir=log_dir, env=env, timeout=300) as url:
        yield url, log_dir


@pytest.fixture(scope="module")
def attract_app(vllm_server: SharedServer, tmp_path_factory):
    env = booth_env(vllm_server, RCHAT_KIOSK_IDLE_SECONDS="3", RCHAT_KIOSK_ATTRACT="true")
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path_factory.mktemp("attract"), env=env, timeout=300) as url:
        yield url


def user_messages(page) -> list[str]:
    return page.locator('[data-step-type="user_message"]').all_inner_texts()


def finished(page) -> str:
    return "finish:" in (answers(page) or [""])[-1] and answers(page)[-1]


def strip_numbers(page) -> dict[str, float] | None:
    if not page.locator("#rchat-live-strip").is_visible():
        return None
    read = {key: page.inner_text(f"#rchat-live-{key}") for key in ("running", "waiting", "tps", "kv")}
    return {key: float(value) if value not in ("", "–") else -1.0 for key, value in read.items()}


def stored_questions(log_dir) -> list[tuple[str, str]]:
    """(user, question) of every stored user message in the app's history database."""
    with sqlite3.connect(log_dir / "data" / "history.sqlite3") as db:
        return db.execute(
            'SELECT t."userIdentifier", s.output FROM steps s JOIN threads t ON s."threadId" = t.id '
            "WHERE s.type = 'user_message'"
        ).fetchall()


@pytest.mark.server
def test_booth_page_is_bare_large_and_resets_itself_when_idle(booth_app) -> None:
    url, log_dir = booth_app
    with browser_page(url, wait_s=120) as page:
        assert "/login" not in page.url  # a password user exists, but a booth asks no one to log in
        assert page.locator("#chat-settings-open-modal").count() == 0
        assert page.locator("#sidebar-trigger-button, [data-sidebar='sidebar']").count() == 0
        assert page.evaluate("getComputedStyle(document.documentElement).fontSize") == "21px"
        send(page, LONG_QUESTION)  # up to 400 tokens: longer than the 4 s idle time
        wait_for(lambda: len((answers(page) or [""])[-1]) > 20, timeout=90)
        final = wait_for(lambda: finished(page), timeout=400)  # not reset while it streamed
        assert len(final) > 100
        page.screenshot(path=str(shot("booth-answer")))
        # Typing keeps the chat up past the idle time ...
        page.click("#chat-input")
        for _ in range(12):
            page.keyboard.type("a")
            time.sleep(1)
        assert user_messages(page) and page.locator("#starters").count() == 0
        # ... and without it the page returns to a fresh chat with the starters.
        wait_for(lambda: not user_messages(page) and page.locator("#starters").is_visible(), timeout=20)
        assert LONG_QUESTION not in page.inner_text("body")
        assert page.input_value("#chat-input") == ""  # the half-typed "aaaa..." went too
    assert (LOCAL_USER, LONG_QUESTION) in stored_questions(log_dir)  # the visitor's chat is kept, as the local user


@pytest.mark.server
def test_the_strip_moves_while_an_answer_streams(booth_app, vllm_server: SharedServer) -> None:
    url, _ = booth_app
    with browser_page(url, screenshot=shot("booth-strip"), wait_s=120) as page:
        wait_for(lambda: strip_numbers(page), timeout=20)
        assert "smollm2-135m-instruct" in page.inner_text("#rchat-live-strip")
        wait_for(lambda: strip_numbers(page)["running"] == 0, timeout=400)  # an earlier test's answer may still run
        send(page, LONG_QUESTION)
        # The strip and the server are read in one step: the strip refreshes every 2 s, and an answer
        # can be over by the time a later, separate read of the server comes.
        busy = wait_for(
            lambda: (
                (n := strip_numbers(page))
                and n["running"] >= 1
                and n["tps"] > 0
                and running_requests(vllm_server) >= 1
                and n
            ),
            timeout=120,
        )
        page.screenshot(path=str(shot("booth-streaming")))  # the README's picture (docs/img/booth.png)
        assert busy["kv"] > 0  # the answer holds KV-cache blocks while it runs
        wait_for(lambda: finished(page), timeout=400)
        wait_for(lambda: (n := strip_numbers(page)) and n["running"] == 0 and n["tps"] == 0, timeout=30)


def test_the_strip_is_hidden_when_the_server_has_no_metrics(fake_server_url: str, tmp_path) -> None:
    """The fake server (tests/fake_openai_server.py) has no /metrics, like some external servers."""
    env = {"RCHAT_BASE_URL": fake_server_url}
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path, env=env, timeout=300) as url:
        with browser_page(url, wait_s=120) as page:
            send(page, "FIELD")
            wait_for(lambda: "9.8 is bigger." in "".join(answers(page)), timeout=30)
            time.sleep(3)  # more than one poll
            assert not page.locator("#rchat-live-strip").is_visible()
            assert page.locator("#chat-settings-open-modal").count() == 1  # not a booth: the panel is there


@pytest.mark.server
def test_the_attract_loop_asks_by_itself_and_a_touch_stops_it(attract_app, vllm_server: SharedServer) -> None:
    with browser_page(attract_app, wait_s=120) as page:
        asked = wait_for(lambda: user_messages(page), timeout=60)  # nobody touched anything
        wait_for(
            lambda: page.locator("#stop-button").is_visible() and len((answers(page) or [""])[-1]) > 10, timeout=300
        )
        page.screenshot(path=str(shot("booth-attract")))
        page.mouse.click(640, 300)  # a visitor touches the screen
        wait_for(lambda: not user_messages(page) and page.locator("#starters").is_visible(), timeout=10)
        assert page.locator("#stop-button").count() == 0
        wait_for(lambda: running_requests(vllm_server) == 0, timeout=15)  # the demo answer was stopped on the server
        assert asked[0].strip()
