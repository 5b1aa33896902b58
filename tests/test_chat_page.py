"""The chat page in real Chromium: on the real vLLM server, and on a fake one for shapes and faults."""

from __future__ import annotations

import re
import sys
import time

import pytest

from backend.server import processes
from backend.settings import PROJECT_ROOT
from tests.conftest import CLEAR_QUESTION, SharedServer, free_port
from tests.ui_harness import answers, browser_page, chainlit_app, notices, running_requests, send, shot, wait_for

pytestmark = [pytest.mark.browser]  # `server` only on the tests of real_app (vLLM)


@pytest.fixture(scope="module")
def real_app(vllm_server: SharedServer, tmp_path_factory):
    # Temperature 0 so that CLEAR_QUESTION reliably says Paris.
    env = {
        "RCHAT_VLLM_PORT": str(vllm_server.settings.vllm_port),
        "RCHAT_API_KEY": vllm_server.api_key,
        "RCHAT_DEFAULT_TEMPERATURE": "0",
    }
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path_factory.mktemp("ui"), env=env) as url:
        yield url


@pytest.fixture(scope="module")
def fake_app(fake_server_url: str, tmp_path_factory):
    env = {"RCHAT_BASE_URL": fake_server_url, "RCHAT_FIRST_TOKEN_TIMEOUT": "4", "RCHAT_IDLE_TIMEOUT": "4"}
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path_factory.mktemp("fake-ui"), env=env) as url:
        yield url


# --- on the real server ---
@pytest.mark.server
def test_starter_streams_an_answer_with_stats(real_app: str) -> None:
    with browser_page(real_app, screenshot=shot("starter-answer")) as page:
        assert "smollm2-135m-instruct" in page.inner_text("#welcome-screen")
        page.locator("#starters").get_by_text("9.11 or 9.8?").first.click()
        first = wait_for(lambda: (answers(page) or [""])[-1].strip(), timeout=60)
        later = wait_for(lambda: len(answers(page)[-1]) > len(first) + 20 and answers(page)[-1], timeout=60)
        assert later.startswith(first[:10])  # the same answer grew: it streamed in
        final = wait_for(lambda: "finish:" in answers(page)[-1] and answers(page)[-1], timeout=120)
        assert "first token" in final and "tok/s" in final
        assert "Which number is bigger, 9.11 or 9.8?" in page.inner_text("body")


@pytest.mark.server
def test_stop_mid_answer_keeps_text_cancels_on_server_and_chat_goes_on(
    real_app: str, vllm_server: SharedServer
) -> None:
    with browser_page(real_app, screenshot=shot("stopped")) as page:
        send(
            page,
            "Write a very long story about a dragon who learns to count to one thousand. "
            "Use at least 900 words and many chapters.",
        )
        wait_for(lambda: len((answers(page) or [""])[-1]) > 40, timeout=60)
        assert running_requests(vllm_server) >= 1
        page.click("#stop-button")
        stopped = wait_for(lambda: "Stopped by you." in (answers(page) or [""])[-1] and answers(page)[-1], timeout=30)
        assert len(stopped.split("Stopped by you.")[0].strip()) > 40  # what was streamed stays
        wait_for(lambda: running_requests(vllm_server) == 0, timeout=15)  # vLLM aborted the request
        count = len(answers(page))
        send(page, CLEAR_QUESTION)
        reply = wait_for(
            lambda: len(answers(page)) > count and "finish:" in answers(page)[-1] and answers(page)[-1], timeout=120
        )
        assert "Paris" in reply


@pytest.mark.server
def test_a_changed_setting_applies_and_a_bad_one_is_refused(real_app: str) -> None:
    with browser_page(real_app, screenshot=shot("settings")) as page:
        page.click("#chat-settings-open-modal")
        page.fill("#max_tokens", "999999")
        page.get_by_role("button", name="Confirm").click()
        wait_for(lambda: "max tokens must be a whole number from 1 to" in notices(page), timeout=20)
        page.click("#chat-settings-open-modal")
        page.fill("#max_tokens", "5")
        page.get_by_role("button", name="Confirm").click()
        send(page, "Tell me about the history of Rome.")
        reply = wait_for(lambda: "finish:" in (answers(page) or [""])[-1] and answers(page)[-1], timeout=120)
        assert "finish: length" in reply and "cut off at the token limit" in reply
        assert "5 tokens" in reply


@pytest.mark.server
def test_an_overlong_message_gets_a_clear_answer(real_app: str) -> None:
    with browser_page(real_app) as page:
        send(page, "x" * 16_500)
        wait_for(lambda: "the limit is 16,000" in notices(page), timeout=30)
        send(page, CLEAR_QUESTION)
        wait_for(lambda: "Paris" in "".join(answers(page)), timeout=120)


@pytest.mark.server
def test_a_thinking_budget_the_server_cannot_honour_is_refused_in_words(real_app: str) -> None:
    """The embedded model's vLLM runs without a reasoning parser, so it refuses thinking_token_budget;
    the composer's own picker sends it, and the page says why and what to do."""
    with browser_page(real_app, screenshot=shot("thinking-budget-refused")) as page:
        page.click("#mode-picker-trigger-budget")
        page.get_by_role("option", name="Think ≤ 256 tokens").click()
        send(page, CLEAR_QUESTION)
        reply = wait_for(lambda: next((a for a in answers(page) if "finish:" in a), ""), timeout=120)
        assert "cannot cap thinking" in reply and "reasoning parser" in reply and "Traceback" not in reply
        page.click("#mode-picker-trigger-budget")
        page.get_by_role("option", name="No cap").click()
        wait_for(lambda: page.inner_text("#mode-picker-trigger-budget") == "No cap", timeout=10)
        send(page, CLEAR_QUESTION)
        wait_for(lambda: "Paris" in "".join(answers(page)), timeout=120)


# --- on the fake server: shapes and faults the embedded model can't produce ---
def test_inline_thinking_shows_in_a_step_that_reads_thought_for(fake_app: str) -> None:
    with browser_page(fake_app, screenshot=shot("thinking")) as page:
        send(page, "THINK: which is bigger, 9.11 or 9.8?")
        wait_for(lambda: "Thinking" in page.inner_text("body"), timeout=20)  # streams while thinking
        final = wait_for(lambda: "finish:" in (answers(page) or [""])[-1] and answers(page)[-1], timeout=30)
        assert "The bigger number is 9.8." in final and "<think>" not in final and "80 hundredths" not in final
        body = page.inner_text("body")
        assert re.search(r"Thought for (\d+ s|less than a second)", body) and "Used" not in body


def test_reasoning_field_and_cut_off_thinking(fake_app: str) -> None:
    with browser_page(fake_app, screenshot=shot("cutoff")) as page:
        send(page, "FIELD")
        wait_for(lambda: "9.8 is bigger." in "".join(answers(page)), timeout=30)
        assert re.search(r"Thought for (\d+ s|less than a second)", page.inner_text("body"))
        send(page, "CUTOFF")
        wait_for(lambda: "gave no final answer" in page.inner_text("body"), timeout=30)
        assert "Thinking cut off by the token limit" in page.inner_text("body")


def test_html_in_an_answer_is_shown_as_text_never_run(fake_app: str) -> None:
    with browser_page(fake_app, screenshot=shot("xss")) as page:
        send(page, "SCRIPT")
        final = wait_for(lambda: "done." in "".join(answers(page)) and "".join(answers(page)), timeout=30)
        time.sleep(1)
        assert page.evaluate("window.__pwned") is None
        assert page.locator('[data-step-type="assistant_message"] script').count() == 0
        assert page.locator('[data-step-type="assistant_message"] img[onerror]').count() == 0
        assert "<script>" in final  # visible as text


def test_a_server_that_stops_sending_is_cut_off_with_a_message(fake_app: str) -> None:
    with browser_page(fake_app) as page:
        send(page, "HANG")
        final = wait_for(lambda: "too long" in "".join(answers(page)) and answers(page)[-1], timeout=30)
        assert "Starting to answer" in final  # the partial answer is kept
        send(page, "SILENT")
        wait_for(lambda: "too long" in answers(page)[-1] and len(answers(page)) >= 2, timeout=30)


def test_backend_down_is_shown_and_the_chat_recovers_when_it_is_back(tmp_path) -> None:
    """No server on the page's port, then one comes up there: the page says so, waits, and answers.

    The server that comes up is the fake one (tests/fake_openai_server.py): what is tested is the
    page's waiting and recovery. The same sequence with a real vLLM coming back after a crash is in
    tests/test_start_service.py (a question asked while vLLM restarts); a vLLM start here cost the
    suite 30-60 s more and tested nothing the page does differently."""
    vllm_port = free_port()
    with chainlit_app(
        ui_port=free_port(), log_dir=tmp_path, env={"RCHAT_VLLM_PORT": str(vllm_port), "RCHAT_DEFAULT_TEMPERATURE": "0"}
    ) as url:
        with browser_page(url, screenshot=shot("backend-down")) as page:
            wait_for(lambda: "not answering" in notices(page), timeout=20)  # said on arrival
            send(page, "Which number is bigger, 9.11 or 9.8?")
            wait_for(lambda: notices(page).count("not answering") >= 2, timeout=20)
            page.screenshot(path=str(shot("backend-down-waiting")))
            assert "Traceback" not in page.inner_text("body") and not answers(page)
            server = processes.spawn_group(
                [sys.executable, "-m", "tests.fake_openai_server", str(vllm_port)],
                env=None,
                log_path=tmp_path / "fake.log",
                cwd=PROJECT_ROOT,
            )
            try:
                reply = wait_for(lambda: "finish:" in "".join(answers(page)) and answers(page)[-1], timeout=60)
                assert "The bigger number is 9.8" in reply  # the fake's scripted answer, after its thinking
                assert "ready again" in notices(page)
            finally:
                processes.stop_group(server, grace=2)


def test_a_starter_answer_is_checked_against_the_answer_key(fake_app: str) -> None:
    with browser_page(fake_app, screenshot=shot("answer-key")) as page:
        page.locator("#starters").get_by_text(
            "9.11 or 9.8?"
        ).first.click()  # the fake answers "The bigger number is **9.8**."
        final = wait_for(lambda: "finish:" in (answers(page) or [""])[-1] and answers(page)[-1], timeout=30)
        assert "Answer key: correct — final answer read as 9.8; expected 9.8" in final
