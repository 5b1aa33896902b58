"""The repository's reasoning questions and their answer keys (backend/answers/grading/questions.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

QUESTIONS_FILE = Path(__file__).with_name("questions.json")

# How a final answer is compared with the key (see backend/answers/grading/answer_compare.py).
KINDS = ("number", "money", "duration", "weekday", "date", "ordinal", "letter", "yes/no", "choice", "word")


@dataclass(frozen=True)
class Question:
    id: str
    label: str
    question: str
    expected: str
    accept: tuple[str, ...]
    reject: tuple[str, ...] = ()
    starter: bool = False
    kind: str = "word"
    options: tuple[str, ...] = ()  # choice: every option the question offers, the right one too
    direction: str = ""  # choice: what the question asks for ("bigger", "smaller", "youngest")
    about: tuple[str, ...] = ()  # words naming what is asked for (the "ball" of "how much does the ball cost")
    not_about: tuple[str, ...] = ()  # words naming other quantities of the question (the "bat")


def _question(q: dict[str, Any]) -> Question:
    if q.get("kind", "word") not in KINDS:
        raise ValueError(f"question {q['id']}: unknown kind {q.get('kind')!r} (one of {', '.join(KINDS)})")
    return Question(
        id=q["id"],
        label=q["label"],
        question=q["question"],
        expected=q["expected"],
        accept=tuple(q["accept"]),
        reject=tuple(q.get("reject", ())),
        starter=q.get("starter", False),
        kind=q.get("kind", "word"),
        options=tuple(q.get("options", ())),
        direction=q.get("direction", ""),
        about=tuple(q.get("about", ())),
        not_about=tuple(q.get("not_about", ())),
    )


@cache
def load_questions(path: Path = QUESTIONS_FILE) -> tuple[Question, ...]:
    return tuple(_question(q) for q in json.loads(Path(path).read_text())["questions"])


def starters() -> list[Question]:
    return [q for q in load_questions() if q.starter]
