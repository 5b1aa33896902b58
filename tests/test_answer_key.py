"""The answer key: which final answers count as correct."""

from __future__ import annotations

import pytest

from backend.qa.answer_key import check
from backend.qa.question_set import load_questions, starters

BIGGER = "Which number is bigger, 9.11 or 9.8?"


@pytest.mark.parametrize(("answer", "correct"), [
    ("The bigger number is **9.8**.", True),
    ("9.8 is larger, since 0.80 > 0.11", True),
    ("9.11 is bigger than 9.8.", False),  # mentions 9.8 but says the wrong thing
    ("The answer is 9.81.", False),
    ("I am not sure.", False),
])
def test_bigger_decimal(answer: str, correct: bool) -> None:
    verdict = check(BIGGER, answer)
    assert verdict is not None and verdict.correct is correct and verdict.expected == "9.8"


def test_questions_not_in_the_key_get_no_verdict() -> None:
    assert check("Tell me a joke", "Why did the chicken...") is None
    assert check(BIGGER, "   ") is None


def test_key_matching_ignores_case_and_spacing_of_the_question() -> None:
    assert check("  which number is BIGGER,   9.11 or 9.8? ", "9.8").correct


def test_every_starter_has_an_expected_answer_and_the_9_8_question_is_there() -> None:
    assert BIGGER in [q.question for q in starters()]
    assert all(q.expected and q.accept for q in load_questions())
