"""`qa board`: Bradley-Terry ratings from battle votes, checked against known strengths and by hand."""

from __future__ import annotations

import json
import math
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from backend.cli import main
from backend.errors import CompareInputError
from backend.qa.compare.battles import Battle, battles_from_records, parse_votes, select
from backend.qa.compare.board import board_text, build_board
from backend.qa.compare.ratings import rate
from backend.qa.history_db import prepare
from backend.settings import PROJECT_ROOT

TRUE = {"w": 1100.0, "x": 1050.0, "y": 950.0, "z": 900.0}  # mean 1000, as the board anchors


def simulate(rng: random.Random, battles: int) -> list[Battle]:
    """Battles between random pairs, each won as the Bradley-Terry model with TRUE ratings says."""
    names, drawn = list(TRUE), []
    for _ in range(battles):
        a, b = rng.sample(names, 2)
        p_a = 1 / (1 + 10 ** ((TRUE[b] - TRUE[a]) / 400))
        drawn.append(Battle(a, b, "a" if rng.random() < p_a else "b"))
    return drawn


def gap(ratings: dict, better: str, worse: str) -> float:
    return ratings[better].rating - ratings[worse].rating


def votes_file(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "votes.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_simulated_battles_give_back_the_order_and_the_ratings() -> None:
    ratings = rate(simulate(random.Random(1), 4000), rounds=30, seed=1)
    assert list(ratings) == ["w", "x", "y", "z"]
    for name, true in TRUE.items():
        assert ratings[name].rating == pytest.approx(true, abs=30)
        assert ratings[name].low <= ratings[name].rating <= ratings[name].high
    assert sum(r.rating for r in ratings.values()) / 4 == pytest.approx(1000)


def test_the_95_percent_intervals_cover_the_true_ratings_about_95_percent_of_the_time() -> None:
    rng, covered = random.Random(7), []
    for tournament in range(100):
        ratings = rate(simulate(rng, 300), rounds=50, seed=tournament)
        covered += [ratings[name].low <= true <= ratings[name].high for name, true in TRUE.items()]
    assert 0.85 <= sum(covered) / len(covered) <= 1.0


def test_three_wins_of_four_is_a_gap_of_400_log10_3() -> None:
    ratings = rate([Battle("A", "B", "a")] * 3 + [Battle("B", "A", "a")], rounds=10, seed=0)
    assert gap(ratings, "A", "B") == pytest.approx(400 * math.log10(3), abs=0.5)  # 190.8; the ridge moves it 0.1
    assert (ratings["A"].rating + ratings["B"].rating) / 2 == pytest.approx(1000)


@pytest.mark.parametrize("tie", ["tie", "both_bad"])
def test_a_tie_and_both_bad_count_half_a_win_for_each(tie: str) -> None:
    # A: one win and two ties of three battles = 2 points to B's 1: odds 2, a gap of 400 * log10(2).
    ratings = rate([Battle("A", "B", "a"), Battle("A", "B", tie), Battle("B", "A", tie)], rounds=10, seed=0)
    assert gap(ratings, "A", "B") == pytest.approx(400 * math.log10(2), abs=0.5)


def test_exclude_ties_leaves_ties_and_both_bad_out(tmp_path: Path, capsys) -> None:
    votes = (
        [{"a": "A", "b": "B", "winner": "a"}] * 3
        + [{"a": "A", "b": "B", "winner": "b"}]
        + [{"a": "A", "b": "B", "winner": "tie"}] * 2
        + [{"a": "B", "b": "A", "winner": "both_bad"}] * 2
    )
    path = votes_file(tmp_path, votes)
    assert main(["qa", "board", "--votes", str(path), "--json", "--bootstrap", "10", "--seed", "1"]) == 0
    with_ties = json.loads(capsys.readouterr().out)
    assert main(["qa", "board", "--votes", str(path), "--json", "--bootstrap", "10", "--exclude-ties"]) == 0
    without = json.loads(capsys.readouterr().out)
    assert with_ties["battles"] == 8 and without["battles"] == 4
    gap_with = with_ties["ratings"]["A"]["rating"] - with_ties["ratings"]["B"]["rating"]
    gap_without = without["ratings"]["A"]["rating"] - without["ratings"]["B"]["rating"]
    assert gap_with == pytest.approx(400 * math.log10(5 / 3), abs=0.5)  # 5 points of 8
    assert gap_without == pytest.approx(400 * math.log10(3), abs=0.5)


def test_the_cli_prints_exactly_one_json_object_of_the_documented_shape(tmp_path: Path) -> None:
    votes = [b.__dict__ for b in simulate(random.Random(3), 300)]
    path = votes_file(tmp_path, [{"a": v["a"], "b": v["b"], "winner": v["winner"]} for v in votes])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "backend",
            "qa",
            "board",
            "--votes",
            str(path),
            "--json",
            "--bootstrap",
            "50",
            "--seed",
            "2",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    board = json.loads(done.stdout)  # the whole of stdout is one object
    assert set(board) == {"battles", "ratings"} and board["battles"] == 300
    assert list(board["ratings"]) == ["w", "x", "y", "z"]
    for rating in board["ratings"].values():
        assert set(rating) == {"rating", "low", "high"}
        assert rating["low"] <= rating["rating"] <= rating["high"]


def test_the_table_shows_ratings_win_rates_and_both_matrices() -> None:
    battles = [Battle("A", "B", "a")] * 3 + [Battle("A", "B", "b"), Battle("B", "C", "a"), Battle("C", "B", "a")]
    text = board_text(build_board(battles, rounds=20, seed=0), heading="six battles")
    lines = text.splitlines()
    assert lines[0] == "six battles" and "95% interval" in lines[2]
    assert lines[4].split()[:2] == ["1", "A"] and lines[4].endswith("75%")  # 3 of 4 won
    assert "win rate of the row against the column" in text and "battles between them:" in text
    assert "note:" not in text  # nobody unbeaten, everyone connected


def test_an_unbeaten_player_gets_a_finite_rating_and_a_note() -> None:
    board = build_board([Battle("A", "B", "a")] * 3 + [Battle("B", "C", "tie")], rounds=20, seed=0)
    assert all(math.isfinite(v) for s in board.standings for v in (s.rating.rating, s.rating.low, s.rating.high))
    assert board.standings[0].player == "A"
    assert any(note.startswith("A never lost") for note in board.notes)


def test_groups_that_never_met_are_named() -> None:
    board = build_board([Battle("A", "B", "a"), Battle("B", "A", "a"), Battle("C", "D", "tie")], rounds=5, seed=0)
    assert any("never met" in note and "A, B" in note and "C, D" in note for note in board.notes)


def test_tag_selects_battles_and_a_tag_nobody_has_is_named(tmp_path: Path, capsys) -> None:
    path = votes_file(
        tmp_path,
        [
            {"a": "A", "b": "B", "winner": "a", "tag": "math"},
            {"a": "A", "b": "B", "winner": "b", "tag": "letters"},
            {"a": "A", "b": "B", "winner": "b", "tag": "letters"},
        ],
    )
    assert len(select(parse_votes(path.read_text()), tag="letters")) == 2
    assert main(["qa", "board", "--votes", str(path), "--json", "--tag", "letters", "--bootstrap", "5"]) == 0
    assert json.loads(capsys.readouterr().out)["battles"] == 2
    assert main(["qa", "board", "--votes", str(path), "--tag", "mathh"]) == 1
    assert "no battle has the tag 'mathh' (tags: letters, math)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "line, says",
    [
        ('{"a": "A", "b": "B", "winner": "c"}', '"winner" must be one of a, b, tie, both_bad'),
        ('{"a": "A", "b": "A", "winner": "a"}', "the same contender"),
        ('{"a": "A", "winner": "a"}', '"b" must be a contender'),
        ("not json", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_a_bad_line_exits_2_and_says_its_number_and_what_is_wrong(tmp_path: Path, capsys, line: str, says: str) -> None:
    path = votes_file(tmp_path, [{"a": "A", "b": "B", "winner": "a"}, "", line])
    assert main(["qa", "board", "--votes", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}, line 3: ") and says in err and "\n" not in err


def test_an_empty_votes_file_exits_2_with_one_line(tmp_path: Path, capsys) -> None:
    assert main(["qa", "board", "--votes", str(votes_file(tmp_path, ["", "  "]))]) == 2
    assert "holds no votes" in capsys.readouterr().err
    with pytest.raises(CompareInputError, match="holds no votes"):
        parse_votes("")


def test_battles_from_records_reads_voted_battle_records_only() -> None:
    records = [
        {"kind": "battle", "contenders": {"A": "m1", "B": "m2"}, "vote": "b", "tag": "math"},
        {"kind": "answer", "question": "2+2?"},
        {"kind": "battle", "contenders": {"A": "m1", "B": "m2"}, "vote": None},  # not voted yet
        {"kind": "battle", "contenders": {"A": "m2", "B": "m1"}, "vote": "both_bad"},
    ]
    assert battles_from_records(records) == [Battle("m1", "m2", "b", "math"), Battle("m2", "m1", "both_bad")]
    with pytest.raises(CompareInputError, match="stored battle record 1 "):
        battles_from_records([{"kind": "battle", "contenders": {"A": "m1"}, "vote": "a"}])


def _store_battles(path: Path, records: list[dict]) -> None:
    """Battle records as the page is to store them: a message's metadata under "rchat"."""
    prepare(path)
    with sqlite3.connect(path) as db:
        db.execute("""INSERT INTO threads (id, "createdAt", name) VALUES ('t1', '2026-12-08', 'battles')""")
        for n, record in enumerate(records):
            db.execute(
                """INSERT INTO steps (id, name, type, "threadId", metadata, "createdAt")
                          VALUES (?, 'battle', 'assistant_message', 't1', ?, ?)""",
                (f"s{n}", json.dumps({"rchat": record}), f"2026-12-08T00:00:{n:02d}"),
            )


def test_without_votes_the_board_reads_the_battles_stored_in_the_history(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RCHAT_HISTORY_DB", str(tmp_path / "history.sqlite3"))
    assert main(["qa", "board"]) == 0
    assert capsys.readouterr().out.strip() == "no battles stored yet"  # no database yet
    _store_battles(tmp_path / "history.sqlite3", [])
    assert main(["qa", "board"]) == 0
    assert capsys.readouterr().out.strip() == "no battles stored yet"
    battle = {"kind": "battle", "contenders": {"A": "m1", "B": "m2"}, "vote": "a", "tag": "math"}
    _store_battles(tmp_path / "more.sqlite3", [battle] * 3 + [{**battle, "vote": "b"}])
    monkeypatch.setenv("RCHAT_HISTORY_DB", str(tmp_path / "more.sqlite3"))
    assert main(["qa", "board", "--json", "--bootstrap", "10"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["battles"] == 4
    assert board["ratings"]["m1"]["rating"] - board["ratings"]["m2"]["rating"] == pytest.approx(190.8, abs=0.5)
