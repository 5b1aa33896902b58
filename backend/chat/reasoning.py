"""Splits a streamed answer into reasoning and final answer, whatever shape the model streams in.

Shapes handled: reasoning in its own delta field (server run with --reasoning-parser); inline
`<think>...</think>` with the tags split across chunks at any character; streams that start inside
the reasoning and only close it (Qwen3-Thinking-2507: the chat template opens the tag); no tags.
Text that could be the start of a tag is held back until the next chunk decides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OPEN, CLOSE = "<think>", "</think>"
Kind = Literal["reasoning", "answer"]


@dataclass(frozen=True)
class Segment:
    kind: Kind
    text: str


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ThinkTagParser:
    """Incremental parser: feed() chunks, get Segments; finish() flushes what was held back."""

    def __init__(self, *, starts_in_reasoning: bool = False) -> None:
        self.in_reasoning = starts_in_reasoning
        self.seen_open = False
        self.seen_close = False
        self._buffer = ""
        self._answer_started = False

    def feed(self, chunk: str) -> list[Segment]:
        self._buffer += chunk
        out: list[Segment] = []
        while self._buffer:
            if not self.in_reasoning and not self._open_possible():
                self._emit(out, self._buffer)  # the answer has begun: everything is answer text
                self._buffer = ""
                break
            tag = CLOSE if self.in_reasoning else OPEN
            pos = self._buffer.find(tag)
            if tag == OPEN and pos > 0 and self._buffer[:pos].strip():
                pos = -1  # text before "<think>": that is the answer, and the tag is literal text
            if pos >= 0:
                self._emit(out, self._buffer[:pos])
                self._buffer = self._buffer[pos + len(tag) :]
                self._switch()
                continue
            hold = _partial_tag_suffix(self._buffer, tag)
            if tag == OPEN and self._buffer[: len(self._buffer) - hold].strip():
                hold = 0  # answer text came first, so no opening tag can follow
            self._emit(out, self._buffer[: len(self._buffer) - hold])
            self._buffer = self._buffer[len(self._buffer) - hold :]
            break
        return out

    def _open_possible(self) -> bool:
        """An opening tag only counts before any answer text and before any closing tag."""
        return not (self._answer_started or self.seen_close or self.seen_open)

    def _switch(self) -> None:
        if self.in_reasoning:
            self.seen_close, self.in_reasoning = True, False
        else:
            self.seen_open, self.in_reasoning = True, True

    def _emit(self, out: list[Segment], text: str) -> None:
        kind: Kind = "reasoning" if self.in_reasoning else "answer"
        if kind == "answer" and not self._answer_started:
            text = text.lstrip()  # whitespace between </think> and the answer is not the answer
            self._answer_started = bool(text)
        if not text:
            return
        if out and out[-1].kind == kind:
            out[-1] = Segment(kind, out[-1].text + text)
        else:
            out.append(Segment(kind, text))

    def finish(self) -> list[Segment]:
        """End of stream: whatever was held back as a possible tag is plain text after all."""
        out: list[Segment] = []
        self._emit(out, self._buffer)
        self._buffer = ""
        return out
