"""`qa compare`: two accuracy runs (written as `qa run` writes them) question by question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.cli import main
from backend.qa.accuracy import Graded, QuestionAccuracy, wilson_interval
from backend.qa.compare.runs import Tally, difference_interval, read_run
from backend.qa.run_report import write_json


def question(question_id: str, right: int, wrong: int, *, read_wrong: str = "7", unclear: int = 0) -> QuestionAccuracy:
    samples = [Graded("correct", "4")] * right + [Graded("incorrect", read_wrong)] * wrong
    return QuestionAccuracy(question_id, "4", samples + [Graded("unclear")] * unclear)


def write_run(path: Path, questions: list[QuestionAccuracy], model: str) -> Path:
    write_json(
        path,
        questions,
        {
            "served_model": model,
            "started_at": "2026-12-08T10:00:00+00:00",
            "samples": 5,
            "sampling": {"temperature": 0.3, "top_p": 0.9, "max_tokens": 128},
        },
    )
    return path


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = write_run(
        tmp_path / "a.json",
        [
            question("flipped-up", 1, 4),  # majority wrong -> right in B
            question("flipped-down", 4, 1),  # majority right -> wrong in B
            question("same", 5, 0),
            question("more-right", 11, 9),  # majority right in both, intervals apart
            question("gone", 0, 5),
            question("noisy", 1, 3, unclear=1),  # unclear counts as not right; B 2/5: overlaps, no change
        ],
        "model-a",
    )
    b = write_run(
        tmp_path / "b.json",
        [
            question("flipped-up", 4, 1),
            question("flipped-down", 1, 4),
            question("same", 5, 0),
            question("more-right", 20, 0),
            question("noisy", 2, 3),
            question("new", 2, 3),
        ],
        "model-b",
    )
    return a, b


def test_json_gives_each_question_both_runs_the_difference_and_the_change(runs, capsys) -> None:
    assert main(["qa", "compare", str(runs[0]), str(runs[1]), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    by_id = {q["question_id"]: q for q in result["questions"]}
    assert list(by_id) == ["flipped-up", "flipped-down", "same", "more-right", "gone", "noisy", "new"]
    assert {q: by_id[q]["change"] for q in by_id} == {
        "flipped-up": "wrong → right",
        "flipped-down": "right → wrong",
        "same": "",
        "more-right": "accuracy up",
        "gone": "only in A",
        "noisy": "",
        "new": "only in B",
    }
    up = by_id["flipped-up"]
    assert up["a"]["accuracy"] == 0.2 and up["b"]["accuracy"] == 0.8 and up["difference"] == pytest.approx(0.6)
    assert up["a"]["ci95"] == pytest.approx(list(wilson_interval(1, 5)))
    assert up["a"]["majority_correct"] is False and up["b"]["majority_correct"] is True
    assert by_id["gone"]["b"] is None and by_id["gone"]["difference"] is None
    assert result["changed"] == 5


def test_json_totals_pool_every_graded_answer_with_intervals(runs, capsys) -> None:
    assert main(["qa", "compare", str(runs[0]), str(runs[1]), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    a, b = result["a"], result["b"]
    assert (a["correct"], a["graded"]) == (22, 45) and (b["correct"], b["graded"]) == (34, 45)
    assert a["ci95"] == pytest.approx(list(wilson_interval(22, 45)))
    assert a["model"] == "model-a" and b["file"].endswith("b.json")
    assert (a["majority_correct"], a["questions"]) == (3, 6) and (b["majority_correct"], b["questions"]) == (3, 6)
    assert result["difference"] == pytest.approx(34 / 45 - 22 / 45)
    low, high = result["difference_ci95"]
    assert low < result["difference"] < high


def test_the_table_marks_what_changed_and_changed_only_keeps_those_rows(runs, capsys) -> None:
    assert main(["qa", "compare", str(runs[0]), str(runs[1])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("A: ") and "model-a" in lines[0] and "temperature 0.3" in lines[0]
    row = next(line for line in lines if line.startswith("flipped-up"))
    assert row.split()[1:4] == ["1/5", "20%", "4%"] and "+60 pts" in row and row.endswith("wrong → right")
    assert next(line for line in lines if line.startswith("gone")).rstrip().endswith("only in A")
    assert any(line.startswith("all ") and "(95% interval" in line for line in lines)
    assert "majority vote right: A on 3 of 6 question(s), B on 3 of 6" in lines
    assert lines[-1] == "changed: 5 of 7 question(s)"
    assert main(["qa", "compare", str(runs[0]), str(runs[1]), "--changed-only"]) == 0
    shown = capsys.readouterr().out
    assert "flipped-down" in shown and "\nsame " not in shown and "\nnoisy " not in shown
    assert "changed: 5 of 7 question(s)" in shown


def test_changed_only_json_lists_only_changed_questions(runs, capsys) -> None:
    assert main(["qa", "compare", str(runs[0]), str(runs[1]), "--json", "--changed-only"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [q["question_id"] for q in result["questions"]] == [
        "flipped-up",
        "flipped-down",
        "more-right",
        "gone",
        "new",
    ]


def test_a_run_against_itself_changes_nothing(runs, capsys) -> None:
    assert main(["qa", "compare", str(runs[0]), str(runs[0]), "--changed-only"]) == 0
    out = capsys.readouterr().out
    assert "(no question changed)" in out and out.rstrip().endswith("changed: 0 of 6 question(s)")


def test_the_difference_interval_is_newcombes() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, method 10: 56/70 against 48/80 -> 0.0524 to 0.3339.
    low, high = difference_interval(Tally(48, 80), Tally(56, 70))
    assert (low, high) == (pytest.approx(0.0524, abs=1e-4), pytest.approx(0.3339, abs=1e-4))
    assert difference_interval(Tally(0, 0), Tally(1, 2)) is None


@pytest.mark.parametrize(
    "content, says",
    [
        ("{not json", "is not JSON (line 1"),
        ('{"overall": {}}', 'it has no "questions" list'),
        (
            '{"questions": [{"question_id": "q", "correct": 3, "graded": 2, "majority_correct": true}]}',
            "question 1: q: correct and graded must be counts",
        ),
        ('{"questions": [{"question_id": "q", "correct": 1, "graded": 2}]}', "majority_correct must be true or false"),
    ],
)
def test_a_file_that_is_not_an_accuracy_run_exits_2_naming_it(
    tmp_path: Path, runs, capsys, content: str, says: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["qa", "compare", str(runs[0]), str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {bad}") and says in err and "\n" not in err


def test_a_missing_file_exits_2(tmp_path: Path, runs, capsys) -> None:
    assert main(["qa", "compare", str(tmp_path / "nope.json"), str(runs[1])]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_the_repository_run_reads_back() -> None:
    run = read_run(Path(__file__).parent.parent / "docs/results/qa-run-20261203-203318.json")
    assert (run.total.correct, run.total.graded) == (38, 195) and run.majority == (9, 39)
