"""`python -m backend export --votes`: the Compare votes as TRL preference pairs (JSONL) or a CSV table.

The comparisons are real records: each answer ends through the answer path's own `LiveAnswer.ended`
(stamp included), `Comparison.record` builds the battle and `cast` votes on it; they are stored the
way an accuracy run stores its answers (RunStore), and the command runs as a subprocess.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backend.answers.request import new_request
from backend.answers.stream import LiveAnswer
from backend.chat.sampling import Sampling
from backend.qa.compare.comparison import Comparison, cast
from backend.qa.compare.contenders import Contender
from backend.qa.compare.preferences import jsonl_lines
from backend.qa.history_db import prepare
from backend.qa.run_store import RunStore
from backend.records import RECORD_KEY
from backend.settings import PROJECT_ROOT, Settings
from tests.conftest import make_settings

CURRENT = Sampling(system_prompt="", temperature=0.3, top_p=0.9, max_tokens=256, thinking=False, seed=None)
COLD = Contender(name="cold", temperature=0.0)
BRIEF = Contender(name="brief", temperature=0.9, system_prompt="Be brief.")
QUESTION = "Which is bigger, 9.8 or 9.11?"
TRL_KEYS = {"prompt", "chosen", "rejected"}


def battle(settings: Settings, vote: str | None, *, question: str = QUESTION) -> dict:
    """A comparison of COLD (shown as A) and BRIEF (B), both answered, with `vote` cast by alice."""
    comparison = Comparison(question=question, shown={"A": COLD, "B": BRIEF})
    for label, text in (("A", "9.8 is bigger."), ("B", "=9.11")):
        contender = comparison.shown[label]
        sampling = contender.sampling(CURRENT)
        messages = ([{"role": "system", "content": sampling.system_prompt}] if sampling.system_prompt else []) + [
            {"role": "user", "content": question}
        ]
        live = LiveAnswer(new_request(settings, sampling, messages, engine={}, question=question), settings)
        live.answer = text
        comparison.results[label] = live.ended("complete")
    record = comparison.record(answer_ids={"A": "m:A", "B": "m:B"})
    if vote:
        cast(record, vote, reasons=["More accurate"], comment="B is wrong", user="alice")
    return record


def store(path: Path, battles: list[dict]) -> None:
    """Each comparison as a question and an answer message holding its record, as the page keeps it."""
    history = RunStore(path, user="alice", name="Compare chat", metadata={})
    for record in battles:
        asked = history.add_question(record["question"])
        history.add_answer(
            question_step=asked, question=record["question"], shown="", author="Compare", record={RECORD_KEY: record}
        )
    history.close()


def export(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RCHAT_HISTORY_DB": str(tmp_path / "history.sqlite3")}
    return subprocess.run(
        [sys.executable, "-m", "backend", "export", *args],
        check=False,
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def history(tmp_path: Path) -> Path:
    settings = make_settings(tmp_path)
    votes = ["a", "b", "tie", "both_bad", None]
    store(tmp_path / "history.sqlite3", [battle(settings, vote, question=f"{QUESTION} ({vote})") for vote in votes])
    return tmp_path / "history.sqlite3"


def test_pairs_are_trl_conversational_preference_lines_and_ties_are_left_out(history: Path) -> None:
    done = export(history.parent, "--votes")
    assert done.returncode == 0, done.stderr
    a_won, b_won = [json.loads(line) for line in done.stdout.splitlines()]
    assert set(a_won) >= TRL_KEYS and a_won["tie"] is False
    assert a_won["prompt"] == [{"role": "user", "content": a_won["question"]}]  # as sent to the chosen (cold)
    assert a_won["chosen"] == [{"role": "assistant", "content": "9.8 is bigger."}]
    assert a_won["rejected"] == [{"role": "assistant", "content": "=9.11"}]
    assert (a_won["chosen_model"], a_won["rejected_model"], a_won["vote"]) == ("cold", "brief", "a")
    assert a_won["chosen_stamp"]["sampling"]["temperature"] == 0.0
    assert a_won["rejected_stamp"]["system_prompt"] == "Be brief." and a_won["same_prompt"] is False
    assert (a_won["reasons"], a_won["comment"], a_won["user"]) == (["More accurate"], "B is wrong", "alice")
    assert a_won["battle_id"] and a_won["voted_at"] and a_won["question"].endswith("(a)")
    assert b_won["prompt"][0] == {"role": "system", "content": "Be brief."}  # brief's own messages
    assert (b_won["chosen_model"], b_won["chosen"][0]["content"]) == ("brief", "=9.11")
    assert "wrote 2 preference line(s); skipped 1 not voted yet, 2 tie(s) or both bad" in done.stderr


def test_include_ties_writes_them_marked_with_neither_side_chosen(history: Path) -> None:
    done = export(history.parent, "--votes", "--include-ties")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and [line["tie"] for line in lines] == [False, False, True, True]
    tie, both_bad = lines[2:]
    assert (tie["vote"], both_bad["vote"]) == ("tie", "both_bad")
    assert not {"chosen", "rejected"} & set(tie) and (tie["a_model"], tie["b_model"]) == ("cold", "brief")
    assert tie["answer_a"] == [{"role": "assistant", "content": "9.8 is bigger."}] and tie["b_stamp"]
    assert "wrote 4 preference line(s); skipped 1 not voted yet" in done.stderr


def test_csv_has_a_row_per_voted_comparison_and_disarms_formulas(history: Path) -> None:
    out = history.parent / "votes.csv"
    done = export(history.parent, "--votes", "--format", "csv", "--out", str(out))
    assert (
        done.returncode == 0 and f"wrote 4 comparison(s) as CSV rows to {out}; skipped 1 not voted yet" in done.stderr
    )
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8-sig"))))
    assert list(rows[0]) == [
        "question",
        "contender A",
        "contender B",
        "vote",
        "winner",
        "reasons",
        "comment",
        "user",
        "voted at",
        "answer A",
        "answer B",
        "battle id",
    ]
    assert [(r["vote"], r["winner"]) for r in rows] == [("a", "cold"), ("b", "brief"), ("tie", ""), ("both_bad", "")]
    first = rows[0]
    assert (first["contender A"], first["contender B"], first["reasons"], first["user"]) == (
        "cold",
        "brief",
        "More accurate",
        "alice",
    )
    assert first["answer A"] == "9.8 is bigger." and first["answer B"] == "'=9.11"  # not run as a formula
    assert out.read_bytes().startswith(b"\xef\xbb\xbf")  # Excel reads it as UTF-8


def test_user_selects_the_voter(history: Path) -> None:
    assert len(export(history.parent, "--votes", "--user", "alice").stdout.splitlines()) == 2
    nobody = export(history.parent, "--votes", "--user", "bob")
    assert nobody.returncode == 1 and "no comparisons voted by bob stored in" in nobody.stderr


def test_empty_or_missing_history_and_nothing_voted_say_so(tmp_path: Path) -> None:
    missing = export(tmp_path, "--votes")
    assert missing.returncode == 1 and "There is no history database at" in missing.stderr
    prepare(tmp_path / "history.sqlite3")
    empty = export(tmp_path, "--votes")
    assert empty.returncode == 1 and "no comparisons stored in" in empty.stderr and not empty.stdout
    store(tmp_path / "history.sqlite3", [battle(make_settings(tmp_path), "tie")])
    ties_only = export(tmp_path, "--votes")
    assert (
        ties_only.returncode == 1
        and "every vote was a tie or both bad (--include-ties writes them)" in ties_only.stderr
    )


def test_a_voted_comparison_with_an_answer_missing_is_skipped_and_counted(tmp_path: Path) -> None:
    record = battle(make_settings(tmp_path), "b")
    del record["answers"]["B"]  # stopped before B's answer began
    lines, tally = jsonl_lines([record], include_ties=True)
    assert lines == [] and tally.incomplete == 1
    assert tally.summary("preference line(s)").endswith("skipped 0 not voted yet, 1 with an answer missing")


@pytest.mark.parametrize(
    "args, says",
    [
        (["--format", "csv"], "--format csv is for --votes"),
        (["--votes", "--format", "md"], "--votes writes jsonl or csv, not md"),
        (["--votes", "--disagreements"], "are for answers, not --votes"),
    ],
)
def test_options_that_do_not_go_with_votes_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    done = export(tmp_path, *args)
    assert done.returncode == 2 and says in done.stderr


def test_the_datasets_library_loads_the_pairs(history: Path) -> None:
    datasets = pytest.importorskip("datasets")  # not a dependency: checked where it happens to be installed
    out = history.parent / "pairs.jsonl"
    assert export(history.parent, "--votes", "--include-ties", "--out", str(out)).returncode == 0
    rows = datasets.load_dataset("json", data_files=str(out), split="train")
    pairs = rows.filter(lambda row: not row["tie"])
    assert len(rows) == 4 and len(pairs) == 2 and set(pairs.column_names) >= TRL_KEYS
    assert pairs[0]["chosen"] == [{"role": "assistant", "content": "9.8 is bigger."}]
    assert pairs[1]["prompt"][0] == {"role": "system", "content": "Be brief."}
