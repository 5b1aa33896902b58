"""Accuracy of repeated answers: per question, a 95% Wilson interval and the majority vote.

The Wilson score interval is the usual choice for a proportion from few samples: unlike the normal
approximation it stays inside [0, 1] and is not zero-width at 0/n or n/n (which 5 samples often give).
It is five lines, so it is written here rather than pulling in scipy or statsmodels for it.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson_interval(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The 95% Wilson score interval of correct/n; (0, 1) when nothing was graded."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0/n and n/n the bounds are exactly 0 and 1; rounding would otherwise leave them off by 1e-17.
    low = 0.0 if correct == 0 else max(0.0, centre - half)
    high = 1.0 if correct == n else min(1.0, centre + half)
    return low, high


@dataclass
class Graded:
    """One graded sample: the answer key's outcome and the final answer it read (if it says)."""

    outcome: str  # correct | incorrect | unclear | not keyed | error | stopped
    read: str | None = None


@dataclass
class QuestionAccuracy:
    question_id: str
    expected: str
    samples: list[Graded] = field(default_factory=list)

    @property
    def graded(self) -> int:
        """Answers the key judged (an unclear one counts: the model gave no final answer)."""
        return sum(s.outcome in ("correct", "incorrect", "unclear") for s in self.samples)

    @property
    def correct(self) -> int:
        return sum(s.outcome == "correct" for s in self.samples)

    def count(self, outcome: str) -> int:
        return sum(s.outcome == outcome for s in self.samples)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.graded if self.graded else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.correct, self.graded)

    @property
    def majority_correct(self) -> bool:
        """Whether the answer most samples settled on is right (a tie, or nothing read, is not)."""
        votes = Counter(_vote(s) for s in self.samples if s.outcome in ("correct", "incorrect"))
        if not votes:
            return False
        ranked = votes.most_common()
        top_key, top = ranked[0]
        return top_key == "correct" and (len(ranked) == 1 or ranked[1][1] < top)

    def as_dict(self) -> dict:
        low, high = self.interval
        return {
            "question_id": self.question_id,
            "expected": self.expected,
            "samples": len(self.samples),
            "graded": self.graded,
            "correct": self.correct,
            "incorrect": self.count("incorrect"),
            "unclear": self.count("unclear"),
            "errors": self.count("error"),
            "accuracy": self.accuracy,
            "ci95": [low, high],
            "majority_correct": self.majority_correct,
            "answers_read": [s.read for s in self.samples],
        }


def _vote(sample: Graded) -> str:
    # Every correct answer is the same answer however it was written (5 cents, $0.05); wrong ones
    # are told apart by the value the key read, when it says (else all wrong ones are one vote).
    if sample.outcome == "correct":
        return "correct"
    return "wrong: " + " ".join((sample.read or "").lower().split())


def overall(questions: list[QuestionAccuracy]) -> dict:
    """Pooled sample accuracy with its interval, and the share of questions the majority vote gets right."""
    graded = sum(q.graded for q in questions)
    correct = sum(q.correct for q in questions)
    low, high = wilson_interval(correct, graded)
    voted = [q for q in questions if q.graded]
    majority = sum(q.majority_correct for q in voted)
    return {
        "graded": graded,
        "correct": correct,
        "accuracy": correct / graded if graded else None,
        "ci95": [low, high],
        "questions": len(voted),
        "majority_correct": majority,
        "majority_accuracy": majority / len(voted) if voted else None,
    }
