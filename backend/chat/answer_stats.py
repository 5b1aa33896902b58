"""Timing and token counts of one answer, as shown under it (and later stored and exported)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field


@dataclass
class AnswerStats:
    started: float = field(default_factory=time.monotonic)
    first_token_at: float | None = None
    reasoning_started: float | None = None
    reasoning_ended: float | None = None
    ended: float | None = None
    reasoning_chunks: int = 0  # vLLM streams one token per chunk unless --stream-interval says more
    answer_chunks: int = 0
    completion_tokens: int | None = None  # from the server's usage, when it sends one
    server_reasoning_tokens: int | None = None  # the usage's reasoning_tokens (vLLM with a reasoning parser)
    prompt_tokens: int | None = None
    finish_reason: str | None = None

    def on_reasoning(self) -> None:
        now = self._token()
        self.reasoning_chunks += 1
        self.reasoning_started = self.reasoning_started or now

    def on_answer(self) -> None:
        now = self._token()
        self.answer_chunks += 1
        if self.reasoning_started and not self.reasoning_ended:
            self.reasoning_ended = now

    def _token(self) -> float:
        now = time.monotonic()
        self.first_token_at = self.first_token_at or now
        return now

    def finish(self) -> None:
        self.ended = time.monotonic()
        if self.reasoning_started and not self.reasoning_ended:
            self.reasoning_ended = self.ended

    @property
    def ttft(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.started

    @property
    def thinking_seconds(self) -> float:
        if not self.reasoning_started:
            return 0.0
        return (self.reasoning_ended or time.monotonic()) - self.reasoning_started

    @property
    def reasoning_tokens(self) -> int:
        return self.reasoning_chunks if self.server_reasoning_tokens is None else self.server_reasoning_tokens

    @property
    def reasoning_counted_by(self) -> str:
        """Where the reasoning count comes from: the server's usage, or the streamed chunks (a token each
        at vLLM's default --stream-interval 1)."""
        return "server" if self.server_reasoning_tokens is not None else "stream chunks"

    @property
    def answer_tokens(self) -> int:
        if self.completion_tokens is not None:
            return max(0, self.completion_tokens - self.reasoning_tokens)
        return self.answer_chunks

    @property
    def tokens_per_second(self) -> float | None:
        """Decode speed: tokens after the first over the time since the first."""
        total = self.reasoning_tokens + self.answer_tokens
        if self.first_token_at is None or self.ended is None or total < 2:
            return None
        span = self.ended - self.first_token_at
        return (total - 1) / span if span > 0 else None

    def summary(self, model: str = "") -> str:
        parts = [model] if model else []
        if self.ttft is not None:
            parts.append(f"first token {self.ttft:.2f} s")
        if self.reasoning_started:
            parts.append(f"thought {self.thinking_seconds:.1f} s")
        if self.reasoning_tokens:
            parts.append(f"{self.reasoning_tokens} reasoning + {self.answer_tokens} answer tokens")
        else:
            parts.append(f"{self.answer_tokens} tokens")
        if self.tokens_per_second:
            parts.append(f"{self.tokens_per_second:.1f} tok/s")
        parts.append(f"finish: {self.finish_reason or 'none'}")
        return " · ".join(parts)

    def as_dict(self) -> dict:
        data = asdict(self)
        data.update(
            ttft=self.ttft,
            thinking_seconds=self.thinking_seconds,
            reasoning_tokens=self.reasoning_tokens,
            reasoning_counted_by=self.reasoning_counted_by,
            answer_tokens=self.answer_tokens,
            tokens_per_second=self.tokens_per_second,
        )
        return data
