"""Run against run: two accuracy runs (the JSON `python -m backend qa run` writes), question by question.

Per question each run's accuracy (right / graded) with its 95% Wilson interval, B minus A, and a
change where the result differs: the majority vote flipped (right to wrong or back), or the two
intervals do not overlap (the share of right answers moved beyond what sampling explains).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from backend.errors import CompareInputError
from backend.qa.accuracy import wilson_interval


@dataclass(frozen=True)
class Tally:
    """Right answers out of graded ones; `majority_correct` for one question (None for a run's total)."""

    correct: int
    graded: int
    majority_correct: bool | None = None

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.graded if self.graded else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.correct, self.graded)

    def as_dict(self) -> dict[str, Any]:
        figures = {
            "correct": self.correct,
            "graded": self.graded,
            "accuracy": self.accuracy,
            "ci95": list(self.interval),
        }
        return figures if self.majority_correct is None else {**figures, "majority_correct": self.majority_correct}


@dataclass(frozen=True)
class Run:
    path: Path
    about: dict[str, Any]  # the file's other fields: model, sampling, start time ...
    questions: dict[str, Tally]  # in the file's order

    @property
    def total(self) -> Tally:
        """All graded answers pooled (as the run's own `overall` figures)."""
        return Tally(sum(q.correct for q in self.questions.values()), sum(q.graded for q in self.questions.values()))

    @property
    def majority(self) -> tuple[int, int]:
        """Questions the majority vote gets right, of those graded."""
        graded = [q for q in self.questions.values() if q.graded]
        return sum(bool(q.majority_correct) for q in graded), len(graded)


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _tally(item: Any) -> Tally:
    if not isinstance(item, dict) or not isinstance(item.get("question_id"), str):
        raise CompareInputError("not a question's figures (no question_id)")
    correct, graded, majority = item.get("correct"), item.get("graded"), item.get("majority_correct")
    if not (_is_count(correct) and _is_count(graded) and 0 <= correct <= graded):
        raise CompareInputError(f"{item['question_id']}: correct and graded must be counts, correct <= graded")
    if not isinstance(majority, bool):
        raise CompareInputError(f"{item['question_id']}: majority_correct must be true or false")
    return Tally(correct, graded, majority)


def read_run(path: Path) -> Run:
    """An accuracy run's JSON; CompareInputError names the file and what is wrong with it."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise CompareInputError(f"cannot read {path}: {err}") from None
    except json.JSONDecodeError as err:
        raise CompareInputError(f"{path} is not JSON (line {err.lineno}: {err.msg})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("questions"), list):
        raise CompareInputError(
            f'{path} is not an accuracy run (the JSON `python -m backend qa run` writes): it has no "questions" list'
        )
    questions: dict[str, Tally] = {}
    for number, item in enumerate(payload["questions"], start=1):
        try:
            tally = _tally(item)
        except CompareInputError as err:
            raise CompareInputError(f"{path}, question {number}: {err}") from None
        if item["question_id"] in questions:
            raise CompareInputError(f"{path}, question {number}: {item['question_id']} appears twice")
        questions[item["question_id"]] = tally
    about = {k: v for k, v in payload.items() if k not in ("questions", "overall")}
    return Run(path, about, questions)


@dataclass(frozen=True)
class QuestionChange:
    question_id: str
    a: Tally | None  # None: the question is not in run A
    b: Tally | None

    @property
    def difference(self) -> float | None:
        """B's accuracy minus A's; None unless both graded it."""
        return None if self.a is None or self.b is None else accuracy_difference(self.a, self.b)

    @property
    def change(self) -> str:
        """What changed, in words; empty when the result is the same."""
        a, b = self.a, self.b
        if a is None or b is None:
            return "only in B" if a is None else "only in A"
        if not a.graded or not b.graded:
            return "" if a.graded == b.graded else ("graded only in B" if b.graded else "graded only in A")
        if a.majority_correct != b.majority_correct:
            return "wrong → right" if b.majority_correct else "right → wrong"
        (low_a, high_a), (low_b, high_b) = a.interval, b.interval
        return "accuracy up" if low_b > high_a else "accuracy down" if high_b < low_a else ""

    @property
    def changed(self) -> bool:
        return bool(self.change)

    def as_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "a": self.a.as_dict() if self.a else None,
            "b": self.b.as_dict() if self.b else None,
            "difference": self.difference,
            "change": self.change,
            "changed": self.changed,
        }


def accuracy_difference(a: Tally, b: Tally) -> float | None:
    """B's accuracy minus A's; None unless both graded something."""
    return None if a.accuracy is None or b.accuracy is None else b.accuracy - a.accuracy


def compare_questions(a: Run, b: Run) -> list[QuestionChange]:
    """Every question of either run: A's in A's order, then those only B asked."""
    ids = list(a.questions) + [q for q in b.questions if q not in a.questions]
    return [QuestionChange(q, a.questions.get(q), b.questions.get(q)) for q in ids]


def difference_interval(a: Tally, b: Tally) -> tuple[float, float] | None:
    """95% interval of B's accuracy minus A's: Newcombe's hybrid score method, built from the two Wilson
    intervals (it treats answers as independent, as the pooled accuracy's own interval does)."""
    if not a.graded or not b.graded:
        return None
    (low_a, high_a), (low_b, high_b) = a.interval, b.interval
    pa, pb = a.correct / a.graded, b.correct / b.graded  # their accuracy: both have graded answers
    d = pb - pa
    return d - math.hypot(pb - low_b, high_a - pa), d + math.hypot(high_b - pb, pa - low_a)
