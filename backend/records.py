"""The stored records, typed: an answer's record, its stamp and engine facts, the answer key's grade.

An answer is stored as Chainlit message metadata under `RECORD_KEY`. Records carry a `version`;
those stored before versions existed read as version 1, and every model keeps keys it does not
name, so a stored record reads back and is written out again exactly as it was (`stored()`).
The answer key's grade is `AnswerRecord.grade`, stored under the key "verdict" (the key stays: databases
and exports use it); "verdict" in the code means only the QA user's own (backend/qa/verdicts.py).
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RECORD_KEY = "rchat"  # message metadata key of an answer's record (page writes it, export and resume read it)
RECORD_VERSION = 2  # 2: engine facts in every stamp, thinking budget and effort; 1: before versions


class Stored(BaseModel):
    """A stored JSON object: typed where we read it, other keys kept as they are."""

    model_config = ConfigDict(extra="allow")

    def stored(self) -> dict[str, Any]:
        """As stored: only the keys that were given (a record read back is written out unchanged)."""
        return self.model_dump(mode="json", exclude_unset=True)


class EngineFacts(Stored):
    """What served the answer (backend/engine/facts.py); `unknown` names facts an external server hides."""

    source: str | None = None  # launcher, settings or server
    device: str | None = None
    dtype: str | None = None
    vllm_version: str | None = None
    model_hash: str | None = None
    max_model_len: int | None = None
    served_max_model_len: int | None = None
    enable_chunked_prefill: bool | None = None
    flags: list[str] | None = None
    unknown: list[str] = Field(default_factory=list)


class Stamp(Stored):
    """What produced an answer, exactly enough to send it again (backend/answers/stamp.py)."""

    served_model: str = ""
    model_path: str = ""
    vllm_version: str = "unknown"
    server_url: str = ""
    sampling: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    seed_source: str | None = None
    thinking: bool | None = None
    thinking_budget: int | None = None
    reasoning_effort: str | None = None
    system_prompt: str = ""
    context_messages: int = 0
    request: dict[str, Any] = Field(default_factory=dict)
    engine: EngineFacts = Field(default_factory=EngineFacts)
    started_at: str | None = None
    finished_at: str | None = None
    stats: dict[str, Any] = Field(default_factory=dict)
    app_commit: str = "unknown"


class GradeRecord(Stored):
    """The answer key's grade as stored (backend/answers/grading/answer_key.py `Grade`)."""

    question_id: str = ""
    expected: str = ""
    outcome: str = "unclear"
    read: str | None = None
    found_in: str | None = None
    how: str | None = None


class AnswerRecord(Stored):
    """One answer as stored with its message: question, texts, outcome, grade and stamp."""

    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    version: int = 1
    kind: Literal["answer"] = "answer"
    question_id: str = ""
    question: str = ""
    sample: int = 1
    outcome: str = ""
    thinking_step_id: str = ""
    reasoning: str = ""
    answer: str = ""
    grade: GradeRecord | None = Field(default=None, alias="verdict")  # stored as "verdict"
    stamp: Stamp = Field(default_factory=Stamp)


def grade_fields(grade: Any) -> dict[str, Any] | None:
    """The answer key's grade as stored: its fields plus the outcome and the final answer it read."""
    if grade is None:
        return None
    fields = asdict(grade) if is_dataclass(grade) and not isinstance(grade, type) else {}
    return {
        **fields,
        "question_id": grade.question_id,
        "expected": grade.expected,
        "outcome": grade.outcome,
        "read": getattr(grade, "read", None),
    }


def answer_record(
    *,
    question_id: str,
    question: str,
    sample: int,
    outcome: str,
    reasoning: str,
    answer: str,
    grade: Any,
    stamp: dict[str, Any],
    thinking_step_id: str = "",
) -> dict[str, Any]:
    """The metadata stored with an answer message, by the page and by accuracy runs alike."""
    record = AnswerRecord(
        version=RECORD_VERSION,
        kind="answer",
        question_id=question_id,
        question=question,
        sample=sample,
        outcome=outcome,
        thinking_step_id=thinking_step_id,
        reasoning=reasoning,
        answer=answer,
        grade=None if grade is None else GradeRecord.model_validate(grade_fields(grade)),
        stamp=Stamp.model_validate(stamp),
    )
    return {RECORD_KEY: record.stored()}


class ExportRow(Stored):
    """One answer as `backend export` writes it: where it is, what it said, the answer key's grade (written as
    "verdict"), the QA user's verdict, its stamp."""

    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    thread_id: str
    thread_name: str | None = None
    user: str | None = None
    answer_id: str
    question_id: str | None = None
    question: str | None = None
    sample: int = 1
    outcome: str | None = None
    reasoning: str = ""
    answer: str = ""
    shown: str = ""
    grade: dict[str, Any] | None = Field(default=None, alias="verdict")  # written as "verdict"
    human_verdict: dict[str, str] | None = None
    agreement: str | None = None
    stamp: dict[str, Any] = Field(default_factory=dict)
    battle: dict[str, Any] | None = None  # set only for an answer of a comparison


class BattleRecord(Stored):
    """A blind comparison as stored with its message (backend/qa/compare/comparison.py): both answers'
    records with their stamps, the contender shown as A and as B, and the vote once given."""

    version: int = 1
    kind: Literal["battle"] = "battle"
    id: str
    question: str = ""
    tag: str | None = None  # the answer key's question id, when the question is keyed
    contenders: dict[str, str] = Field(default_factory=dict)  # "A"/"B" -> contender name
    setups: dict[str, dict[str, Any]] = Field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = Field(default_factory=dict)  # "A"/"B" -> an answer record and its id
    vote: Literal["a", "b", "tie", "both_bad"] | None = None
    reasons: list[str] = Field(default_factory=list)
    comment: str = ""
    user: str = ""
    started_at: str | None = None
    voted_at: str | None = None
