"""The answer record: what the page, the chat code and the QA records pass between them.

An answer is stored as Chainlit message metadata under `RECORD_KEY`; `AnswerResult` is what one
answer's handling returns to app.py (typed, instead of a dict read with `.get`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

RECORD_KEY = "rchat"  # message metadata key of an answer's record (page writes it, export and resume read it)


@dataclass
class AnswerResult:
    """What happened to one answer: outcome is complete, stopped, error, interrupted or backend down."""

    outcome: str
    answer: str = ""
    reasoning: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    dropped_turns: int = 0
    verdict: str | None = None  # the answer key's verdict (correct / incorrect / unclear), if keyed
    message: Any = None  # the page's message object, so app.py can clear its buttons later


def verdict_fields(verdict: Any) -> dict[str, Any] | None:
    """The answer key's verdict as stored: its fields plus the outcome and the final answer it read."""
    if verdict is None:
        return None
    fields = asdict(verdict) if is_dataclass(verdict) else {}
    return {**fields, "question_id": verdict.question_id, "expected": verdict.expected,
            "outcome": verdict.outcome, "read": getattr(verdict, "read", None)}


def answer_record(*, question_id: str, question: str, sample: int, outcome: str, reasoning: str, answer: str,
                  verdict: Any, stamp: dict[str, Any], thinking_step_id: str = "") -> dict[str, Any]:
    """The metadata stored with an answer message, by the page and by accuracy runs alike."""
    return {RECORD_KEY: {"kind": "answer", "question_id": question_id, "question": question, "sample": sample,
                         "outcome": outcome, "thinking_step_id": thinking_step_id, "reasoning": reasoning,
                         "answer": answer, "verdict": verdict_fields(verdict), "stamp": stamp}}
