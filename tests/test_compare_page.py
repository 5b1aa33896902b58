"""Compare mode in real Chromium: two answers side by side, blind until the vote, stored, resumed.

Against the fake server of tests/fake_openai_server.py (scripted answers arrive in a fixed time, so
both sides stream at once and end on cue); the contenders are two setups of that one server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.qa.compare.battles import battles_from_records, load_battle_records
from backend.qa.export import load_records
from backend.settings import PROJECT_ROOT
from tests.conftest import CLEAR_QUESTION, free_port
from tests.harness_cli import replay_cli
from tests.ui_harness import browser_page, chainlit_app, send, shot, wait_for

pytestmark = [pytest.mark.browser]
CONTENDERS = """pair = ["cool", "warm"]
[[contender]]
name = "cool"
temperature = 0.1
[[contender]]
name = "warm"
temperature = 0.9
system_prompt = "You are warm."
"""


@pytest.fixture(scope="module")
def compare_app(fake_server_url: str, tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare-ui")
    (folder / "contenders.toml").write_text(CONTENDERS)
    env = {"RCHAT_BASE_URL": fake_server_url, "RCHAT_CONTENDERS_FILE": str(folder / "contenders.toml")}
    with chainlit_app(ui_port=free_port(), log_dir=folder, env=env) as url:
        yield url, folder / "data" / "history.sqlite3", fake_server_url


def pick_compare(page, option: str = "Compare: your contenders") -> None:
    page.click("#mode-picker-trigger-answer")
    page.get_by_role("option", name=option).click()
    wait_for(lambda: page.inner_text("#mode-picker-trigger-answer") == option, timeout=10)


def battle_text(page) -> str:
    return page.inner_text(".battle") if page.locator(".battle").count() else ""


def test_a_blind_comparison_streams_side_by_side_and_reveals_after_the_vote(compare_app) -> None:
    url, history, _ = compare_app
    with browser_page(url, screenshot=shot("compare-revealed")) as page:
        pick_compare(page)
        send(page, "FIELD: which is bigger, 9.11 or 9.8?")
        wait_for(lambda: page.locator(".battle-side").count() == 2, timeout=30)
        wait_for(lambda: page.locator(".battle[data-phase=vote]").count() == 1, timeout=30)
        blind = battle_text(page)
        assert blind.count("9.8 is bigger.") == 2 and "cool" not in blind and "warm" not in blind
        assert "tok/s" not in blind and "Answer key" not in blind
        page.screenshot(path=str(shot("compare-blind")), full_page=True)
        page.click("[data-reason='More concise']")
        page.fill(".battle-comment", "A reads better")
        page.locator("body").click(position={"x": 5, "y": 5})  # out of the comment box, so the key votes
        page.keyboard.press("1")
        wait_for(lambda: page.locator(".battle[data-phase=revealed]").count() == 1, timeout=20)
        shown = battle_text(page)
        assert "cool" in shown and "warm" in shown and "tok/s" in shown and "Your vote: A is better" in shown
    [record] = load_battle_records(history)
    assert record["vote"] == "a" and record["reasons"] == ["More concise"] and record["comment"] == "A reads better"
    assert set(record["contenders"].values()) == {"cool", "warm"}
    stamps = {label: a["stamp"] for label, a in record["answers"].items()}
    temperatures = {record["contenders"][label]: s["sampling"]["temperature"] for label, s in stamps.items()}
    assert temperatures == {"cool": 0.1, "warm": 0.9}
    [battle] = battles_from_records([record])
    assert battle.winner == "a" and battle.a == record["contenders"]["A"]
    rows = [r for r in load_records(history) if "battle" in r]
    assert {r["answer_id"].rsplit(":", 1)[1] for r in rows} == {"A", "B"} and all(r["stamp"] for r in rows)
    env = {"RCHAT_BASE_URL": compare_app[2], "RCHAT_DATA_DIR": str(history.parent)}
    replayed = replay_cli(env, rows[0]["answer_id"], timeout=120)
    assert f"Replay of answer {rows[0]['answer_id']}" in replayed.stdout, replayed.stdout + replayed.stderr
    assert "9.8 is bigger." in replayed.stdout


def test_stop_stops_both_answers_and_keeps_what_they_wrote(compare_app) -> None:
    url, _, _ = compare_app
    with browser_page(url) as page:
        pick_compare(page)
        send(page, "SLOW: count side by side")
        wait_for(lambda: battle_text(page).count("word3") == 2, timeout=30)
        page.locator("#stop-button").click(timeout=20_000)
        wait_for(lambda: page.locator(".battle[data-phase=vote]").count() == 1, timeout=30)
        text = battle_text(page)
        assert text.count("Stopped by you.") == 2 and "word40" not in text


def test_a_resumed_compare_chat_shows_its_comparison_and_an_unvoted_one_can_be_voted(compare_app) -> None:
    url, history, _ = compare_app
    with browser_page(url) as page:
        pick_compare(page)
        send(page, "FIELD: which is bigger, 9.11 or 9.8? (second)")
        wait_for(lambda: page.locator(".battle[data-phase=vote]").count() == 1, timeout=40)
    with browser_page(url, screenshot=shot("compare-resumed")) as page:  # a new tab, the chat from the sidebar
        page.locator("#thread-history").get_by_text("(second)").first.click(timeout=30_000)
        page.wait_for_url("**/thread/**", timeout=30_000)
        wait_for(lambda: page.locator(".battle[data-phase=vote]").count() == 1, timeout=30)
        assert battle_text(page).count("9.8 is bigger.") == 2
        page.click("[data-vote=tie]")
        wait_for(lambda: page.locator(".battle[data-phase=revealed]").count() == 1, timeout=20)
    votes = [r["vote"] for r in load_battle_records(history) if "(second)" in r["question"]]
    assert votes == ["tie"]
    assert json.loads(json.dumps(votes))  # stored as plain JSON


def test_the_leaderboard_command_rates_the_votes_given(compare_app) -> None:
    url, _, _ = compare_app
    with browser_page(url, screenshot=shot("compare-board")) as page:
        page.click("#command-Leaderboard")
        page.locator("#chat-submit:not([disabled])").click(timeout=20_000)
        wait_for(lambda: "Leaderboard ·" in page.inner_text("body"), timeout=30)
        board = page.inner_text("body")
        assert "2 voted comparison(s)" in board and "cool" in board and "warm" in board
        assert "95 % interval" in board and "win rate" in board


def test_a_booth_runs_a_public_which_answer_is_better_vote(fake_server_url: str, tmp_path: Path) -> None:
    """Booth mode (no sidebar, no settings): the built-in greedy-against-sampled pair, voted with a key."""
    env = {"RCHAT_BASE_URL": fake_server_url, "RCHAT_KIOSK": "true", "RCHAT_CONTENDERS_FILE": ""}
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path, env=env) as url:
        with browser_page(url, screenshot=shot("compare-booth")) as page:
            assert page.locator("#mode-picker-trigger-thinking").count() == 0  # thinking: the operator's .env
            pick_compare(page, "Compare: greedy vs sampled")
            send(page, "FIELD: which is bigger, 9.11 or 9.8?")
            wait_for(lambda: page.locator(".battle[data-phase=vote]").count() == 1, timeout=40)
            assert "greedy" not in battle_text(page)
            page.locator("body").click(position={"x": 5, "y": 5})
            page.keyboard.press("2")
            wait_for(lambda: "greedy (temperature 0)" in battle_text(page), timeout=20)
    [record] = load_battle_records(tmp_path / "data" / "history.sqlite3")
    assert record["vote"] == "b" and set(record["contenders"].values()) == {
        "greedy (temperature 0)",
        "sampled (temperature 0.9)",
    }


@pytest.mark.server
def test_two_setups_of_the_real_model_compete_blind_and_are_stored_with_their_stamps(vllm_server, tmp_path) -> None:
    """The real vLLM on the embedded model: greedy against warm sampling with its own system prompt."""
    (tmp_path / "contenders.toml").write_text(
        '[[contender]]\nname = "greedy"\ntemperature = 0.0\nmax_tokens = 48\n'
        '[[contender]]\nname = "warm"\ntemperature = 0.9\nmax_tokens = 48\n'
        'system_prompt = "Answer in one short sentence."\n'
    )
    env = {
        "RCHAT_VLLM_PORT": str(vllm_server.settings.vllm_port),
        "RCHAT_API_KEY": vllm_server.api_key,
        "RCHAT_CONTENDERS_FILE": str(tmp_path / "contenders.toml"),
    }
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path, env=env) as url:
        with browser_page(url, screenshot=shot("compare-real")) as page:
            pick_compare(page)
            send(page, CLEAR_QUESTION)
            wait_for(lambda: page.locator(".battle[data-phase=vote]").count() == 1, timeout=300)
            assert "greedy" not in battle_text(page) and "warm" not in battle_text(page)
            page.click("[data-vote=b]")
            wait_for(lambda: page.locator(".battle[data-phase=revealed]").count() == 1, timeout=30)
    [record] = load_battle_records(tmp_path / "data" / "history.sqlite3")
    by_name = {record["contenders"][label]: answer for label, answer in record["answers"].items()}
    assert by_name["greedy"]["stamp"]["sampling"]["temperature"] == 0.0 and by_name["greedy"]["answer"].strip()
    assert by_name["warm"]["stamp"]["system_prompt"] == "Answer in one short sentence."
    assert by_name["warm"]["stamp"]["engine"]["vllm_version"] not in ("", "unknown")
    assert record["vote"] == "b" and record["answers"]["A"]["outcome"] == "complete"


def test_the_compare_runs_command_puts_two_accuracy_runs_side_by_side(compare_app, tmp_path: Path) -> None:
    from backend.page.runs_view import pick_runs

    runs = sorted((PROJECT_ROOT / "docs" / "results").glob("qa-run-*.json"))[:2]
    assert "comparing needs two" in str(pick_runs("", tmp_path)) and "No run file" in str(pick_runs("x y", tmp_path))
    url, _, _ = compare_app
    with browser_page(url, screenshot=shot("compare-runs")) as page:
        page.click('[id="command-Compare runs"]')
        page.fill("#chat-input", f"{runs[0]} {runs[1]}")
        page.locator("#chat-submit:not([disabled])").click(timeout=20_000)
        wait_for(lambda: f"A: {runs[0].name}" in page.inner_text("body"), timeout=30)
        assert "changed:" in page.inner_text("body")  # the per-question table ends with what changed
