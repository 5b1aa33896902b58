"""How one answer ended, typed: its texts, stats, grade and stamp, and the one wording of its end.

The rules live here once: an answer is graded only if it completed; a cut-off answer counts only
where it stated its answer outright (backend/answers/grading/answer_key.py); and the note under an
answer says why it ended where it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from backend.answers.grading.answer_key import Grade, check
from backend.answers.request import AnswerRequest
from backend.chat.answer_stats import AnswerStats
from backend.errors import BackendRejected, BackendUnavailable
from backend.records import answer_record

Outcome = Literal["complete", "stopped", "error", "interrupted"]
STOPPED_NOTE = "Stopped by you."
PANEL_LIMIT = "*Max tokens* in the settings panel"  # where a page user raises the token limit


def grade_answer(question: str, answer: str, *, outcome: str, finish_reason: str | None) -> Grade | None:
    """The answer key's grade of a completed answer to a keyed question; None otherwise."""
    if outcome != "complete" or finish_reason not in ("stop", "length"):
        return None
    return check(question, answer, cut_off=finish_reason == "length")


def thought_for(seconds: float) -> str:
    return "Thought for less than a second" if seconds < 1 else f"Thought for {round(seconds)} s"


@dataclass(frozen=True)
class AnswerOutcome:
    """One answer as it ended (`outcome`), with what it said, how it ran and what produced it."""

    outcome: Outcome
    request: AnswerRequest
    answer: str
    reasoning: str
    stats: AnswerStats
    stamp: dict[str, Any]
    grade: Grade | None = None
    error: str = ""  # the worded failure, for "error" and "interrupted"
    failure: Exception | None = field(default=None, compare=False, repr=False)  # what was raised

    @property
    def fatal(self) -> bool:
        """The failure would meet every later answer too (the server gone, the key refused)."""
        return isinstance(self.failure, (BackendUnavailable, BackendRejected))

    @property
    def finish_reason(self) -> str | None:
        return self.stats.finish_reason

    @property
    def thinking_cut_off(self) -> bool:
        """It spent the whole token budget thinking and never began its answer."""
        return self.finish_reason == "length" and not self.answer.strip()

    def note(self, *, limit_setting: str, stopped: str = STOPPED_NOTE) -> str:
        """Why the answer ended where it did, in words; "" for an answer that simply finished.

        `limit_setting` names where the user raises the token limit ("--max-tokens", a panel field)."""
        if self.outcome == "stopped":
            return stopped
        if self.outcome in ("error", "interrupted"):
            kept = " What was already written is kept above." if self.answer or self.reasoning else ""
            return f"{self.error}{kept}"
        if self.thinking_cut_off:
            return (
                f"The model used its whole token budget thinking and gave no final answer. Raise "
                f"{limit_setting} and ask again."
            )
        if self.finish_reason == "length":
            return f"The answer was cut off at the token limit ({limit_setting})."
        return ""

    def thinking_label(self) -> str:
        """The reasoning step's title once the answer has ended."""
        seconds = self.stats.thinking_seconds
        if self.thinking_cut_off:
            return f"Thinking cut off by the token limit after {seconds:.0f} s"
        if self.outcome != "complete":
            return f"Thinking interrupted after {seconds:.0f} s"
        return thought_for(seconds)

    def record(self, *, thinking_step_id: str = "") -> dict[str, Any]:
        """The metadata stored with the answer message (backend/records.py)."""
        return answer_record(
            question_id=self.request.question_id,
            question=self.request.question,
            sample=self.request.sample,
            outcome=self.outcome,
            reasoning=self.reasoning,
            answer=self.answer,
            grade=self.grade,
            stamp=self.stamp,
            thinking_step_id=thinking_step_id,
        )
