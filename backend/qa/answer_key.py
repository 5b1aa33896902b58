"""Checks a final answer against the repository's answer key (backend/qa/questions.json)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from backend.qa.question_set import Question, load_questions


@dataclass(frozen=True)
class Verdict:
    question_id: str
    expected: str
    correct: bool

    @property
    def outcome(self) -> str:
        return "correct" if self.correct else "incorrect"

    def describe(self) -> str:
        return f"**Answer key: {'correct' if self.correct else 'incorrect'}** (expected: {self.expected})"


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[*_`]", "", text).lower().split())


def _mentions(answer: str, phrase: str) -> bool:
    """Whole-phrase match: "9.8" is in "is 9.8." but not in "9.81" or "19.8"."""
    return re.search(rf"(?<![\w.]){re.escape(_normal(phrase))}(?!\w)", answer) is not None


def find_question(text: str) -> Question | None:
    wanted = _normal(text)
    return next((q for q in load_questions() if _normal(q.question) == wanted), None)


def check(question_text: str, answer: str) -> Verdict | None:
    """A verdict when the question is in the key, else None. Reject phrases win over accept ones."""
    question = find_question(question_text)
    if question is None or not answer.strip():
        return None
    said = _normal(answer)
    correct = (not any(_mentions(said, r) for r in question.reject)
               and any(_mentions(said, a) for a in question.accept))
    return Verdict(question.id, question.expected, correct)
