"""When a chat opens on a page process that is not streaming its answer: follow it, mark it, or leave it.

The rule behind tests/test_live_follow.py's browser tests, on stored steps as the history holds them.
Times are taken when each test runs (a full suite runs for many minutes after collection).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from backend.page.follow import _progress, stale_after
from backend.page.live_answers import SAVED_KEY
from backend.records import RECORD_KEY
from tests.conftest import make_settings

SETTINGS = make_settings(Path("logs"), persist_interval=1)
AGO = 10 * stale_after(SETTINGS)  # seconds: long past any save that keeps an answer "running"


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def question(at: float) -> dict:
    return {"id": "q", "type": "user_message", "createdAt": iso(at), "metadata": {}}


def thinking(at: float, saved: float) -> dict:
    return {"id": "t", "type": "llm", "createdAt": iso(at), "metadata": {SAVED_KEY: saved}}


def answer(at: float, outcome: str, saved: float) -> dict:
    record = {"kind": "answer", "outcome": outcome, "stamp": {"finished_at": iso(saved)}}
    return {"id": "a", "type": "assistant_message", "createdAt": iso(at), "metadata": {RECORD_KEY: record}}


def test_a_question_asked_a_moment_ago_with_nothing_stored_after_it_is_followed() -> None:
    assert _progress([question(time.time() - 1)], SETTINGS) == ("running", None)


def test_an_answer_still_thinking_on_another_process_is_followed_while_its_thinking_is_saved() -> None:
    now = time.time()
    steps = [question(now - AGO), thinking(now - AGO, saved=now - 1)]
    assert _progress(steps, SETTINGS)[0] == "running"


def test_a_stored_answer_in_progress_and_saved_lately_is_followed() -> None:
    now = time.time()
    steps = [question(now - AGO), answer(now - AGO, "in progress", saved=now - 1)]
    assert _progress(steps, SETTINGS) == ("running", steps[1])


def test_an_answer_in_progress_saved_long_ago_is_stale_and_handed_back_to_be_marked() -> None:
    now = time.time()
    steps = [question(now - AGO), answer(now - AGO, "in progress", saved=now - AGO)]
    assert _progress(steps, SETTINGS) == ("stale", steps[1])


def test_a_question_long_unanswered_is_left_alone() -> None:
    assert _progress([question(time.time() - AGO)], SETTINGS) == ("stale", None)


def test_a_finished_answer_ends_the_turn_and_a_notice_does_not() -> None:
    now = time.time()
    assert _progress([question(now - 1), answer(now, "complete", saved=now)], SETTINGS)[0] == "done"
    notice = {"id": "n", "type": "assistant_message", "createdAt": iso(now), "metadata": {}}
    assert _progress([question(now - 1), notice], SETTINGS)[0] == "running"  # e.g. Stop pressed while it thinks
    assert _progress([question(now - AGO), notice], SETTINGS)[0] == "stale"


def test_only_the_last_question_counts() -> None:
    now = time.time()
    earlier = [question(now - AGO), answer(now - AGO, "complete", saved=now - AGO)]
    assert _progress([*earlier, {**question(now - 1), "id": "q2"}], SETTINGS)[0] == "running"


def test_a_browser_clock_running_ahead_does_not_keep_a_dead_answer_running() -> None:
    now = time.time()
    steps = [question(now + 3600), answer(now + 3600, "in progress", saved=now - AGO)]
    assert _progress(steps, SETTINGS) == ("stale", steps[1])
