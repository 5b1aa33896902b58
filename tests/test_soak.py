"""Load: 32 chat sessions at once through the real page on the real vLLM, checked for errors,
cross-talk and the page's memory. The long version is `python -m backend.bench.soak` (docs/reliability.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.bench.soak import SessionLog, Turn, cross_talk, passed, soak
from tests.conftest import SharedServer, free_port
from tests.ui_harness import chainlit_app

SESSIONS = 32
MAX_GROWTH_MIB = 50.0


@pytest.fixture(scope="module")
def page(vllm_server: SharedServer, tmp_path_factory) -> tuple[str, Path]:
    log_dir = tmp_path_factory.mktemp("soak-ui")
    env = {
        "RCHAT_VLLM_PORT": str(vllm_server.settings.vllm_port),
        "RCHAT_API_KEY": vllm_server.api_key,
        "RCHAT_DEFAULT_MAX_TOKENS": "16",
    }
    with chainlit_app(ui_port=free_port(), log_dir=log_dir, env=env) as url:
        yield url, log_dir / "data" / "history.sqlite3"


@pytest.mark.server
@pytest.mark.timeout(900)
async def test_32_sessions_at_once_get_their_own_answers_without_errors(page: tuple[str, Path]) -> None:
    url, db = page
    result = await soak(url, sessions=SESSIONS, minutes=0, min_turns=3, db=db)
    assert result["errors"] == []
    assert result["cross_talk"] == []
    assert result["answers"] == SESSIONS * 3
    # Every session's thread holds its own three questions, checked against the database itself.
    assert result["db_checked"] and len({log["thread_id"] for log in result["logs"]}) == SESSIONS
    memory = result["memory"]
    assert memory["rss_mib"]["start"] > 0
    assert memory["growth_after_first_round_mib"] <= MAX_GROWTH_MIB, memory["rss_mib"]
    assert passed(result, MAX_GROWTH_MIB)
    # The database check can fail: claim session 0's questions were asked in session 1's thread.
    first, second = result["logs"][0], result["logs"][1]
    swapped = SessionLog(0, thread_id=second["thread_id"], turns=[Turn(**t) for t in first["turns"]])
    assert any("the database holds questions" in p for p in cross_talk([swapped], db))


def test_the_cross_talk_check_finds_an_answer_in_the_wrong_session() -> None:
    """The check itself, on made-up logs: the soak is only worth its pass if this can fail."""
    a = SessionLog(0, thread_id="t-a", turns=[Turn("[s00 t0] q", answer_id="m1", shown="x")])
    b = SessionLog(1, thread_id="t-b", turns=[Turn("[s01 t0] q", answer_id="m2", shown="y")], foreign_threads=["t-a"])
    shared = SessionLog(2, thread_id="t-a")
    assert cross_talk([a], None) == []
    assert any("received messages of threads ['t-a']" in p for p in cross_talk([a, b], None))
    assert any("same thread" in p for p in cross_talk([a, shared], None))
