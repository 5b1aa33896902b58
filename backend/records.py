"""The answer record: what is stored with an answer message, under `RECORD_KEY` of its metadata.

Built by backend/answers/outcome.py (and the page's partial saves); read by export, resume and replay.
Its "verdict" field holds the answer key's grade (the name stays: stored databases use it).
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

RECORD_KEY = "rchat"  # message metadata key of an answer's record (page writes it, export and resume read it)


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
