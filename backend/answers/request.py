"""What one answer sends: the request body exactly as sent, and what its stamp must say about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backend.chat.sampling import Sampling, draws_seeds, request_params, seed_source
from backend.settings import Settings


@dataclass(frozen=True)
class AnswerRequest:
    """One question to answer: the body for chat.completions.create and its context for the stamp."""

    body: dict[str, Any]  # model, messages, sampling params, extra_body (and extra_headers, not stamped)
    engine: dict[str, Any] = field(default_factory=dict)  # backend/engine/facts.py, at the time of asking
    question: str = ""  # the last user message, for the answer key
    question_id: str = ""  # its message id, which the record points to
    sample: int = 1  # 2, 3, ... for another sample of the same question
    seed_source: str | None = None  # "user", "drawn" or "random" (none sent)
    starts_in_reasoning: bool = False  # the chat template opens <think> itself

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages


def new_request(
    settings: Settings,
    sampling: Sampling,
    messages: list[dict[str, Any]],
    *,
    engine: dict[str, Any],
    question: str = "",
    question_id: str = "",
    sample: int = 1,
    session_id: str | None = None,
) -> AnswerRequest:
    """The request for a new answer under `sampling`: the one place a body is built from settings.

    Seeds are drawn unless the engine would crash on them (`draws_seeds`); `session_id` goes out as
    X-Session-ID so that a router with consistent hashing keeps one chat on one replica's cache."""
    draw = draws_seeds(engine)
    body: dict[str, Any] = {
        "model": settings.resolved_served_name,
        "messages": messages,
        **request_params(sampling, draw_seed=draw),
    }
    if session_id:
        body["extra_headers"] = {"X-Session-ID": session_id}
    return AnswerRequest(
        body=body,
        engine=engine,
        question=question,
        question_id=question_id,
        sample=sample,
        seed_source=seed_source(sampling, draw_seed=draw),
        starts_in_reasoning=settings.reasoning_starts_inside and sampling.thinking,
    )
