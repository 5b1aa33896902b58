"""The arithmetic of accuracy runs and of human verdicts: plain functions, no server."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.qa.accuracy import Graded, QuestionAccuracy, overall, wilson_interval
from backend.qa.verdicts import agreement, describe_key, human_verdict


@pytest.mark.parametrize(
    ("correct", "n", "low", "high"),
    [
        (0, 5, 0.0, 0.4345),  # published values (e.g. Brown, Cai & DasGupta 2001; any Wilson calculator)
        (5, 5, 0.5655, 1.0),
        (2, 5, 0.1176, 0.7693),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_the_wilson_interval_matches_published_values(correct: int, n: int, low: float, high: float) -> None:
    assert wilson_interval(correct, n) == pytest.approx((low, high), abs=1e-4)


@given(st.integers(0, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_interval_always_holds_the_observed_share_inside_zero_to_one(case: tuple[int, int]) -> None:
    correct, n = case
    low, high = wilson_interval(correct, n)
    share = correct / n if n else 0.5
    assert 0 <= low <= share <= high <= 1


def q(*samples: Graded) -> QuestionAccuracy:
    return QuestionAccuracy("q", "9.8", list(samples))


def test_majority_vote_counts_every_right_form_as_one_answer_and_splits_wrong_ones_by_value() -> None:
    right, unclear = Graded("correct", "9.8"), Graded("unclear")
    assert q(right, Graded("correct", "9.80"), Graded("incorrect", "9.11")).majority_correct
    # Two right against three wrong answers that all differ: the right answer is still the most common.
    assert q(
        right, right, Graded("incorrect", "1"), Graded("incorrect", "2"), Graded("incorrect", "3")
    ).majority_correct
    assert not q(right, Graded("incorrect", "9.11"), Graded("incorrect", "9.11")).majority_correct
    assert not q(right, Graded("incorrect", "9.11")).majority_correct  # a tie is not a majority
    assert not q(unclear, unclear).majority_correct  # nothing settled on
    assert q(right, unclear, unclear).majority_correct  # no final answer is no vote


def test_accuracy_counts_unclear_answers_as_not_right_and_leaves_errors_out() -> None:
    question = q(Graded("correct"), Graded("unclear"), Graded("incorrect"), Graded("error"))
    assert (question.graded, question.correct, question.accuracy) == (3, 1, pytest.approx(1 / 3))
    total = overall([question, q(Graded("correct"))])
    assert (total["graded"], total["correct"], total["majority_correct"], total["questions"]) == (4, 2, 1, 2)


def test_a_human_verdict_agrees_or_disagrees_with_the_answer_key() -> None:
    right, wrong = human_verdict(1, "fine"), human_verdict(0, None)
    assert right == {"verdict": "right", "comment": "fine"} and wrong == {"verdict": "wrong", "comment": ""}
    assert agreement({"outcome": "correct"}, right) == "agree"
    assert agreement({"outcome": "incorrect"}, right) == "disagree"
    assert agreement({"outcome": "unclear"}, wrong) == "disagree"  # the key could not tell; the person could
    assert agreement({"expected": "9.8", "correct": False}, wrong) == "agree"  # records from before outcomes
    assert agreement(None, right) is None and agreement({"outcome": "correct"}, None) is None
    assert (
        describe_key({"outcome": "incorrect", "read": "1.11", "expected": "9.8"})
        == "answer key: incorrect — final answer read as 1.11; expected 9.8"
    )
