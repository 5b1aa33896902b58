"""Export of the two verdicts on the real SQLite schema, without a server or a page.

The answers are written the way an accuracy run writes them (backend/qa/run_store.py); the human
verdict row is written the way Chainlit's data layer stores feedback (on the answer's run step), which
the browser tests (test_qa_browser.py, test_accuracy_run.py) do for real through the page.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

from backend.qa.export import load_records, to_markdown
from backend.qa.run_store import RunStore
from backend.records import answer_record


def stored_answers(path: Path, outcomes: list[str]) -> list[str]:
    """One question with one answer per key outcome; returns the answers' run step ids."""
    store = RunStore(path, user="local", name="Accuracy run test", metadata={})
    question = store.add_question("Which number is bigger, 9.11 or 9.8?")
    runs = []
    for sample, outcome in enumerate(outcomes, start=1):
        record = answer_record(
            question_id=question,
            question="Which number is bigger, 9.11 or 9.8?",
            sample=sample,
            outcome="complete",
            reasoning="",
            answer=f"answer {sample}",
            grade=None,
            stamp={},
        )
        record["rchat"]["verdict"] = {
            "question_id": "bigger-decimal",
            "expected": "9.8",
            "outcome": outcome,
            "read": "9.8" if outcome == "correct" else "1.11",
        }
        message = store.add_answer(
            question_step=question, question="q", shown=f"answer {sample}", record=record, author="model"
        )
        runs.append(store.db.execute('SELECT "parentId" FROM steps WHERE id = ?', (message,)).fetchone()[0])
    store.close()
    return runs


def judge(path: Path, run_step: str, value: int, comment: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute(
            'INSERT INTO feedbacks (id, "forId", "threadId", value, comment) VALUES (?, ?, NULL, ?, ?)',
            (str(uuid.uuid4()), run_step, value, comment),
        )


def test_human_verdicts_are_exported_beside_the_key_and_disagreements_can_be_listed(tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite3"
    runs = stored_answers(db, ["correct", "incorrect", "unclear", "correct"])
    judge(db, runs[0], 0, "it never says which is bigger")  # key correct, person: wrong
    judge(db, runs[1], 0, "")  # both wrong
    judge(db, runs[2], 1, "9.8, in words")  # key unclear, person: right
    records = load_records(db)
    assert [r["human_verdict"] for r in records] == [
        {"verdict": "wrong", "comment": "it never says which is bigger"},
        {"verdict": "wrong", "comment": ""},
        {"verdict": "right", "comment": "9.8, in words"},
        None,
    ]
    assert [r["agreement"] for r in records] == ["disagree", "agree", "disagree", None]
    assert [r["sample"] for r in load_records(db, disagreements=True)] == [1, 3]
    assert [r["sample"] for r in load_records(db, human_only=True)] == [1, 2, 3]
    markdown = to_markdown(records)
    assert (
        "- answer key: correct — final answer read as 9.8; expected 9.8\n"
        "- human verdict: wrong — it never says which is bigger\n"
        "- **the human verdict and the answer key disagree**" in markdown
    )
