"""The answer record: what the page, the chat code and the QA records pass between them.

An answer is stored as Chainlit message metadata under `RECORD_KEY`; `AnswerResult` is what one
answer's handling returns to app.py (typed, instead of a dict read with `.get`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
