"""The QA workflow as a person does it, in real Chromium on the real backend and the real SQLite file:
log in, give feedback, regenerate, download an export, restart the app and resume the chat."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from backend.qa.export import load_records
from backend.settings import PROJECT_ROOT
from backend.server.supervisor import VLLMServer
from tests.conftest import free_port
from tests.test_chat_page import shot, wait_for
from tests.ui_harness import CHROMIUM, CHROMIUM_ARGS, answers, chainlit_app, send

pytestmark = [pytest.mark.browser, pytest.mark.server]
USER, PASSWORD = "alice", "correct horse battery"


@pytest.fixture(scope="module")
def qa_env(vllm_server: VLLMServer, tmp_path_factory) -> dict[str, str]:
    data = tmp_path_factory.mktemp("qa-browser-data")
    subprocess.run([sys.executable, "-m", "backend", "user", "add", USER, "--password-stdin"], input=PASSWORD + "\n",
                   text=True, check=True, cwd=PROJECT_ROOT, env={"RCHAT_DATA_DIR": str(data), "PATH": "/usr/bin:/bin"})
    return {"RCHAT_VLLM_PORT": str(vllm_server.settings.vllm_port), "RCHAT_API_KEY": vllm_server.api_key,
            "RCHAT_DEFAULT_TEMPERATURE": "0", "RCHAT_DEFAULT_MAX_TOKENS": "40", "RCHAT_DATA_DIR": str(data)}


@contextmanager
def chromium(downloads: Path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
                                     downloads_path=str(downloads))
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        finally:
            browser.close()


def log_in(page, url: str, password: str = PASSWORD) -> None:
    page.goto(url)
    page.fill("#email", USER)
    page.fill("#password", password)
    page.locator('button[type="submit"]').click()


def records(env: dict[str, str]) -> list[dict]:
    return load_records(Path(env["RCHAT_DATA_DIR"]) / "history.sqlite3")


def test_log_in_feedback_regenerate_export_then_restart_and_resume(qa_env: dict[str, str], tmp_path: Path) -> None:
    port = free_port()
    with chainlit_app(ui_port=port, log_dir=tmp_path, env=qa_env) as url, chromium(tmp_path) as page:
        log_in(page, url, password="not the password")
        page.get_by_text("check your user name and password").wait_for(timeout=30_000)
        log_in(page, url)
        page.wait_for_selector("#chat-input", timeout=30_000)

        send(page, "Name a fruit.")
        page.get_by_text("finish:").first.wait_for(timeout=120_000)
        page.locator(".negative-feedback-off").first.click()
        page.get_by_placeholder("Your feedback...").fill("too short, no reasoning")
        page.locator("#submit-feedback").click()
        wait_for(lambda: records(qa_env) and records(qa_env)[0]["feedback"])
        assert records(qa_env)[0]["feedback"] == {"rating": "down", "comment": "too short, no reasoning"}

        page.get_by_role("button", name="Regenerate").click()
        wait_for(lambda: len(answers(page)) == 2, timeout=120)
        wait_for(lambda: len(records(qa_env)) == 2)
        assert [r["sample"] for r in records(qa_env)] == [1, 2]  # the first sample is kept, on the page too

        page.get_by_role("button", name="Export chat").click()
        link = page.locator("a.inline-file[download$='.jsonl']")
        link.wait_for(timeout=30_000)
        with page.expect_download() as download:
            link.click()
        exported = [json.loads(line) for line in Path(download.value.path()).read_text().splitlines()]
        assert [r["sample"] for r in exported] == [1, 2]
        assert exported[0]["feedback"]["comment"] == "too short, no reasoning"
        assert exported[1]["stamp"]["vllm_version"] and exported[1]["stamp"]["sampling"]["temperature"] == 0
        page.screenshot(path=str(shot("qa-export")), full_page=True)

    # The app restarts (same data folder, same port); the chat is in the sidebar and carries on.
    with chainlit_app(ui_port=port, log_dir=tmp_path, env=qa_env) as url, chromium(tmp_path) as page:
        log_in(page, url)
        page.get_by_text("Name a fruit.").first.click(timeout=30_000)  # the sidebar entry
        page.wait_for_url("**/thread/**", timeout=30_000)
        wait_for(lambda: len(answers(page)) == 2)
        send(page, "Name another one.")
        wait_for(lambda: len(records(qa_env)) == 3, timeout=120)
        page.screenshot(path=str(shot("qa-resumed")), full_page=True)
    [resumed] = [r for r in records(qa_env) if r["question"] == "Name another one."]
    assert resumed["stamp"]["context_messages"] == 3  # the model saw the question and the latest sample
    assert resumed["user"] == USER
