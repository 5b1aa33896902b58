"""Everything a QA user does, through HAProxy in front of two page processes (RCHAT_PAGE_WORKERS=2).

The real launcher, real Chainlit pages and HAProxy, on the fake server of tests/fake_openai_server.py
(its keyed answer is scripted, so the answer key grades it the same every time): log in, verdicts,
regenerate, export download, replay, the chat resumed from the sidebar, and a booth screen.
"""

from __future__ import annotations

import json

import pytest

from tests.harness_cli import KEYED, BalancedService, add_user
from tests.ui_harness import (
    PASSWORD,
    USER,
    answers,
    browser_page,
    chromium,
    download_of,
    log_in,
    send,
    set_verdict,
    shot,
    wait_for,
)

pytestmark = [pytest.mark.browser]


def test_the_qa_workflow_through_the_balancer(tmp_path, fake_server_url) -> None:
    add_user(tmp_path / "data", USER, PASSWORD)
    with BalancedService(tmp_path, fake_server_url) as service, chromium(tmp_path) as page:
        service.wait_for("chat ready at")
        log_in(page, service.url)
        page.wait_for_selector("#chat-input", timeout=60_000)
        send(page, KEYED)
        wait_for(lambda: "Answer key: correct" in "".join(answers(page)), timeout=60)
        set_verdict(page, page.locator(".positive-feedback-off").first)
        page.get_by_role("button", name="Regenerate").click()
        wait_for(lambda: page.get_by_text("finish:").count() == 2, timeout=60)
        page.get_by_role("button", name="Export chat").click()
        link = page.locator("a.inline-file[download$='.jsonl']")
        link.wait_for(timeout=30_000)
        exported = [json.loads(line) for line in download_of(page, link).read_text().splitlines()]
        assert [r["sample"] for r in exported] == [1, 2] and exported[0]["human_verdict"]["verdict"] == "right"
        page.get_by_role("button", name="Replay").last.click()
        wait_for(lambda: "Replay: " in page.inner_text("body"), timeout=60)  # the replay's match line under it
        page.goto(service.url)  # a new chat; the old one is in the sidebar
        page.locator("#thread-history").get_by_text(KEYED).first.click(timeout=30_000)
        page.wait_for_url("**/thread/**", timeout=30_000)
        wait_for(lambda: len([a for a in answers(page) if "finish:" in a]) == 2, timeout=30)
        wait_for(lambda: page.locator(".positive-feedback-on").count() == 1, timeout=30)
        page.screenshot(path=str(shot("balanced-qa")), full_page=True)


def test_a_booth_screen_through_the_balancer(tmp_path, fake_server_url) -> None:
    with BalancedService(tmp_path, fake_server_url, RCHAT_KIOSK="true") as service:
        service.wait_for("chat ready at")
        with browser_page(service.url, screenshot=shot("balanced-booth")) as page:
            assert page.locator("#sidebar-trigger-button").count() == 0  # a booth screen: no sidebar
            send(page, KEYED)
            wait_for(lambda: "9.8" in "".join(answers(page)), timeout=60)
