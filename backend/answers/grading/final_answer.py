"""Finds the final answer in an answer's text: where the text says what its answer is.

In order: the last `\\boxed{}`; else the last explicit marker ("final answer:", "the answer is",
"9.81 is the answer"); else the last concluding sentence ("So, ...", "Therefore ...") that states a
value of the question's kind; else the first paragraph that states one (later paragraphs of a small
model are commentary: "This is a classic example of ..."), its last such sentence. If the text changes
its mind ("wait", "actually", "I made a mistake"), only what follows the change counts, unless it
names no value. The caller passes the answer part only, never the reasoning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

BOXED = re.compile(r"\\boxed\s*\{")
# "The final answer is", "Answer:", "the answer is", "my answer would be": the text names its answer.
MARKER = re.compile(
    r"\b(?:final answer|(?:the|my|correct|short) answer|answer)\s*(?:is|would be|:|=|-)\s*:?"
    r"|^\s*answer\b\W*",
    re.IGNORECASE | re.MULTILINE,
)
# "9.81 is the answer", "5 cents is the final answer": the marker comes after the value.
MARKER_AFTER = re.compile(r"\bis\s+(?:the|my|our)\s+(?:final\s+|correct\s+)?answer\b", re.IGNORECASE)
# Sentences that conclude: "So, ...", "Therefore ...", "In conclusion, ...".
CONCLUSION = re.compile(
    r"^\W*(?:so|therefore|thus|hence|in conclusion|in summary|in total|in this case|finally|"
    r"this means|that means)\b",
    re.IGNORECASE,
)
# Words with which a sentence takes back what the text said before ("Wait, ...", "Hmm, actually ...");
# inside a sentence they change nothing ("Tuesday is actually Monday").
CHANGE = re.compile(
    r"(?:^|(?<=[.!?])\s+)\W*(?:(?:but|hmm+|oh|no|ok(?:ay)?)\W+)?(?:wait|actually|on second thought|"
    r"correction|i made a mistake|i was wrong|that'?s (?:not right|wrong|incorrect)|"
    r"let me (?:re-?check|reconsider|recount|recalculate|correct))\b",
    re.IGNORECASE | re.MULTILINE,
)
# A sentence ends at . ! ? followed by a space, or at a line break (the dot of 9.8 has no space after it).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
MARKUP = re.compile(r"\*\*|__|`|^#+\s*|\\[()\[\]]|\$\$", re.MULTILINE)
TEXT_CMD = re.compile(r"\\(?:text|mathrm|textbf)\{([^{}]*)\}")


T = TypeVar("T")


@dataclass(frozen=True)
class FinalAnswer(Generic[T]):
    text: str  # the part of the answer that holds the final answer
    how: str  # "boxed", "marked", "conclusion" or "claim"
    reading: T  # what the caller's reader made of it


def clean(text: str) -> str:
    """Markdown and LaTeX wrappers off; the words and values stay."""
    text = TEXT_CMD.sub(r"\1", text)
    text = MARKUP.sub("", text)
    return text.replace("\u2212", "-").replace("\u2013", "-").replace("\\$", "$").replace("\\%", "%")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s and s.strip()]


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{...}, braces matched."""
    starts = [m.end() for m in BOXED.finditer(text)]
    if not starts:
        return None
    depth, start = 1, starts[-1]
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i].strip()
    return text[start:].strip()


def after_last_change(text: str) -> str:
    """What follows the last change of mind, or the whole text if it never changes it."""
    changes = list(CHANGE.finditer(text))
    return text[changes[-1].start() :] if changes else text


def marked(text: str) -> Iterator[str]:
    """What an explicit answer marker names, the last marker first."""
    found = [(m.end(), "after") for m in MARKER.finditer(text)] + [
        (m.start(), "before") for m in MARKER_AFTER.finditer(text)
    ]
    for at, side in sorted(found, reverse=True):
        if side == "after":
            rest = sentences(text[at:])
            if rest:
                yield rest[0]
        elif before := sentences(text[:at]):
            yield before[-1]  # "So, 9.81 is the answer."
            if len(before) > 1:
                yield before[-2]  # "... = 1.11. This is the answer."


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


# A reader gets a part of the answer and how it was found; it returns what that part states, or None.
Reader = Callable[[str, str], "T | None"]


def find(answer: str, reader: Reader) -> FinalAnswer | None:
    """The final answer of `answer`: the last part where `reader` finds a value of the kind asked."""
    text = clean(answer)
    region = after_last_change(text)
    # Text after a change of mind that names no value ("Actually, this is a classic puzzle") changes nothing.
    return _find_in(region, reader) or (_find_in(text, reader) if region != text else None)


def _find_in(text: str, reader: Reader) -> FinalAnswer | None:
    boxed = last_boxed(text)
    if boxed is not None:
        return FinalAnswer(boxed, "boxed", reader(boxed, "boxed"))
    for part in marked(text):
        if (reading := reader(part, "marked")) is not None:
            return FinalAnswer(part, "marked", reading)
    for sentence in reversed([s for s in sentences(text) if CONCLUSION.match(s)]):
        if (reading := reader(sentence, "conclusion")) is not None:
            return FinalAnswer(sentence, "conclusion", reading)
    # No marker: the answer is where the text first states one; what follows in later paragraphs
    # ("This is a classic example of ...") is commentary, however many numbers it names.
    for paragraph in paragraphs(text):
        for sentence in reversed(sentences(paragraph)):
            if (reading := reader(sentence, "claim")) is not None:
                return FinalAnswer(sentence, "claim", reading)
    return None
