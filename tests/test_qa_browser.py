"""The QA workflow as a person does it, in real Chromium on the real backend and the real SQLite file:
log in, set verdicts (Right / Wrong with a comment), regenerate, download an export, restart the app,
resume the chat, change a verdict, and list where the person and the answer key disagree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.answers.grading.question_set import starters
from backend.qa.export import load_records
from backend.qa.verdicts import key_outcome
from tests.conftest import SharedServer, free_port
from tests.harness_cli import add_user, backend_cli
from tests.ui_harness import (
    PASSWORD,
    USER,
    answers,
    chainlit_app,
    chromium,
    download_of,
    log_in,
    send,
    set_verdict,
    shot,
    wait_for,
)

pytestmark = [pytest.mark.browser, pytest.mark.server]
KEYED = starters()[0].question  # a question of the answer key, so each answer gets the key's grade too


@pytest.fixture(scope="module")
def qa_env(vllm_server: SharedServer, tmp_path_factory) -> dict[str, str]:
    data = tmp_path_factory.mktemp("qa-browser-data")
    add_user(data, USER, PASSWORD)
    return {
        "RCHAT_VLLM_PORT": str(vllm_server.settings.vllm_port),
        "RCHAT_API_KEY": vllm_server.api_key,
        "RCHAT_DEFAULT_TEMPERATURE": "0",
        "RCHAT_DEFAULT_MAX_TOKENS": "40",
        "RCHAT_DATA_DIR": str(data),
    }


def records(env: dict[str, str]) -> list[dict]:
    return load_records(Path(env["RCHAT_DATA_DIR"]) / "history.sqlite3")


def verdict_label(button) -> str:
    """The words the page shows on a verdict button (public/qa.css writes them after the thumb)."""
    return button.evaluate("b => getComputedStyle(b, '::after').content").strip('"')


def human(env: dict[str, str]) -> list[dict | None]:
    return [r["human_verdict"] for r in records(env) if r["question"] == KEYED]


def export_cli(env: dict[str, str], *args: str) -> list[dict]:
    done = backend_cli({"RCHAT_DATA_DIR": env["RCHAT_DATA_DIR"]}, "export", *args)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_log_in_verdicts_regenerate_export_then_restart_resume_and_change_a_verdict(
    qa_env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    with chainlit_app(ui_port=port, log_dir=tmp_path, env=qa_env) as url, chromium(tmp_path) as page:
        log_in(page, url, password="not the password")
        page.get_by_text("check your user name and password").wait_for(timeout=30_000)
        log_in(page, url)
        page.wait_for_selector("#chat-input", timeout=30_000)

        send(page, KEYED)
        page.get_by_text("finish:").first.wait_for(timeout=180_000)
        assert verdict_label(page.locator(".negative-feedback-off").first) == "Wrong"
        set_verdict(page, page.locator(".negative-feedback-off").first, "too short, no reasoning")
        wait_for(lambda: human(qa_env) == [{"verdict": "wrong", "comment": "too short, no reasoning"}])
        assert verdict_label(page.locator(".negative-feedback-on")) == "Your verdict: wrong"

        page.get_by_role("button", name="Regenerate").click()
        wait_for(lambda: len(answers(page)) == 2, timeout=180)
        # Its verdict buttons appear once it has finished streaming (its stats line, "finish: ...").
        wait_for(lambda: page.get_by_text("finish:").count() == 2, timeout=180)
        wait_for(lambda: [r["outcome"] for r in records(qa_env)] == ["complete", "complete"])
        assert [r["sample"] for r in records(qa_env)] == [1, 2]  # the first sample is kept, on the page too
        set_verdict(page, page.locator(".positive-feedback-off").last)  # the regenerated answer: right
        wait_for(lambda: human(qa_env)[1:] == [{"verdict": "right", "comment": ""}])

        page.get_by_role("button", name="Export chat").click()
        link = page.locator("a.inline-file[download$='.jsonl']")
        link.wait_for(timeout=30_000)
        exported = [json.loads(line) for line in download_of(page, link).read_text().splitlines()]
        assert [r["sample"] for r in exported] == [1, 2]
        assert [r["human_verdict"]["verdict"] for r in exported] == ["wrong", "right"]
        assert all(r["verdict"]["expected"] == starters()[0].expected for r in exported)  # the key's, beside it
        assert exported[1]["stamp"]["vllm_version"] and exported[1]["stamp"]["sampling"]["temperature"] == 0
        page.screenshot(path=str(shot("qa-export")), full_page=True)

    # The app restarts (same data folder, same port); the chat is in the sidebar, with its verdicts.
    with chainlit_app(ui_port=port, log_dir=tmp_path, env=qa_env) as url, chromium(tmp_path) as page:
        log_in(page, url)
        page.locator("#thread-history").get_by_text(KEYED).first.click(timeout=30_000)
        page.wait_for_url("**/thread/**", timeout=30_000)
        wait_for(lambda: len(answers(page)) == 2)
        wait_for(
            lambda: (
                page.locator(".negative-feedback-on").count() == 1
                and page.locator(".positive-feedback-on").count() == 1
            )
        )
        set_verdict(page, page.locator(".positive-feedback-off"))  # the first answer: wrong -> right
        wait_for(lambda: human(qa_env)[0] == {"verdict": "right", "comment": ""})
        send(page, "Name another one.")
        wait_for(lambda: len(records(qa_env)) == 3, timeout=180)
        page.screenshot(path=str(shot("qa-resumed")), full_page=True)
    [resumed] = [r for r in records(qa_env) if r["question"] == "Name another one."]
    assert resumed["stamp"]["context_messages"] == 3  # the model saw the question and the latest sample
    assert resumed["user"] == USER

    # Both answers are now judged right by the person: the key disagrees wherever it did not say correct.
    disagree = {
        r["answer_id"] for r in records(qa_env) if r["human_verdict"] and key_outcome(r["verdict"]) != "correct"
    }
    assert {r["answer_id"] for r in export_cli(qa_env, "--disagreements")} == disagree
    assert len(export_cli(qa_env, "--human-verdicts")) == 2
