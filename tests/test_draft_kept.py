"""Words typed before the chat's first message arrives are kept.

Chainlit swaps its composer for a new one when an empty chat gets its first message. On a busy host
(vLLM starting on two cores) the "server is starting" notice can arrive after the visitor began to
type, and the words were lost. Here a model server that accepts connections and never answers holds
the page's health check for its 2 s timeout, so the notice comes after the typing every time.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.ui_harness import CHROMIUM, CHROMIUM_ARGS, chainlit_app, shot

pytestmark = [pytest.mark.browser]
QUESTION = "Which number is bigger, 9.11 or 9.8?"


def test_a_question_typed_before_the_server_notice_arrives_is_kept_and_sent(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as silent:  # listens, never accepts: a health check waits out its timeout
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        env = {"RCHAT_BASE_URL": f"http://127.0.0.1:{silent.getsockname()[1]}/v1"}
        with chainlit_app(ui_port=free_port(), log_dir=tmp_path, env=env) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            try:
                page.goto(url)
                page.fill("#chat-input", QUESTION, timeout=30_000)  # as soon as the box is there
                page.get_by_text("The model server").first.wait_for(timeout=30_000)
                page.wait_for_timeout(500)
                assert page.input_value("#chat-input") == QUESTION, "the typed question was lost"
                page.locator("#chat-submit:not([disabled])").click(timeout=10_000)
                page.locator('[data-step-type="user_message"]').get_by_text(QUESTION).wait_for(timeout=10_000)
            finally:
                page.screenshot(path=str(shot("draft-kept")))
                browser.close()
