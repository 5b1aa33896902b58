"""The repository's reasoning questions and their answer keys (backend/qa/questions.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

QUESTIONS_FILE = Path(__file__).with_name("questions.json")


@dataclass(frozen=True)
class Question:
    id: str
    label: str
    question: str
    expected: str
    accept: tuple[str, ...]
    reject: tuple[str, ...]
    starter: bool


@cache
def load_questions(path: Path = QUESTIONS_FILE) -> tuple[Question, ...]:
    data = json.loads(path.read_text())["questions"]
    return tuple(Question(id=q["id"], label=q["label"], question=q["question"], expected=q["expected"],
                          accept=tuple(q["accept"]), reject=tuple(q.get("reject", ())),
                          starter=q.get("starter", False)) for q in data)


def starters() -> list[Question]:
    return [q for q in load_questions() if q.starter]
