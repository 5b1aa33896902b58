"""One blind comparison: a question to two contenders at once, shown as A and B in random order.

Both answers go the one answer path (backend/answers/stream.py) concurrently, each to its own
observer. The stored record (kind "battle") holds both answers' records with their full stamps,
which contender was shown as A, the vote, reasons, comment, user and times; backend/qa/compare/
battles.py reads its votes for the board, export and replay read its answers.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import openai

from backend.answers.grading.answer_key import find_question
from backend.answers.outcome import PANEL_LIMIT, AnswerOutcome
from backend.answers.request import new_request
from backend.answers.stamp import now_iso
from backend.answers.stream import AnswerObserver, stream_answer
from backend.chat.sampling import Sampling
from backend.engine.facts import FactsCache, engine_facts
from backend.qa.compare.contenders import Contender
from backend.records import BattleRecord
from backend.settings import Settings

LABELS = ("A", "B")
VOTES = {"a": "A is better", "b": "B is better", "tie": "Tie", "both_bad": "Both are bad"}
REASONS = ("More accurate", "Clearer reasoning", "More concise", "Answers what was asked", "Better format")


def cast(record: dict[str, Any], vote: str, *, reasons: list[str], comment: str, user: str) -> None:
    """The vote into a comparison's record (ValueError for a vote that is not one of VOTES)."""
    if vote not in VOTES:
        raise ValueError(f"a vote is one of {', '.join(VOTES)}")
    record.update(
        vote=vote,
        user=user,
        voted_at=now_iso(),
        reasons=[r for r in reasons if r in REASONS],
        comment=comment.strip()[:2000],
    )


@dataclass
class Comparison:
    """A question, the contenders as shown (A, B), and their outcomes once both ended."""

    question: str
    shown: dict[str, Contender]  # label -> contender
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    results: dict[str, AnswerOutcome] = field(default_factory=dict)
    started_at: str = field(default_factory=now_iso)

    def record(self, *, answer_ids: dict[str, str] | None = None) -> dict[str, Any]:
        """What is stored with the comparison's message (RECORD_KEY of its metadata)."""
        question = find_question(self.question)
        answers = {
            label: {
                **result.record()["rchat"],
                "answer_id": (answer_ids or {}).get(label, ""),
                "stats_line": result.stats.summary(result.request.body.get("model", "")),
                "grade_line": result.grade.describe() if result.grade else "",
                "note": result.note(limit_setting=PANEL_LIMIT),
            }
            for label, result in self.results.items()
        }
        return BattleRecord(
            version=1,
            kind="battle",
            id=self.id,
            question=self.question,
            tag=question.id if question else None,
            contenders={label: c.name for label, c in self.shown.items()},
            setups={label: c.model_dump() for label, c in self.shown.items()},
            answers=answers,
            vote=None,
            reasons=[],
            comment="",
            user="",
            started_at=self.started_at,
            voted_at=None,
        ).stored()


def shuffled(pair: tuple[Contender, Contender], rng: random.Random | None = None) -> dict[str, Contender]:
    first, second = pair if (rng or random).random() < 0.5 else pair[::-1]
    return {"A": first, "B": second}


async def run(
    comparison: Comparison,
    *,
    settings: Settings,
    sampling: Sampling,
    client_for: Callable[[Settings], openai.AsyncOpenAI],
    observers: Mapping[str, AnswerObserver],
    stop: Callable[[], bool],
    session_id: str | None = None,
    facts: FactsCache | None = None,
) -> None:
    """Both answers at once into `comparison.results`; a stop or a cancel ends both, kept as stopped."""
    tasks = {
        label: asyncio.create_task(
            _answer(
                contender,
                settings=settings,
                sampling=sampling,
                question=comparison.question,
                client_for=client_for,
                observer=observers[label],
                stop=stop,
                session_id=session_id,
                facts=facts,
            )
        )
        for label, contender in comparison.shown.items()
    }
    try:
        await asyncio.shield(asyncio.gather(*tasks.values()))
    except asyncio.CancelledError:  # Stop: each answer ends as "stopped", keeping what streamed
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
    # A task cancelled before its answer began has no outcome: that side simply stays empty.
    comparison.results = {
        label: task.result() for label, task in tasks.items() if not task.cancelled() and task.exception() is None
    }


async def _answer(
    contender: Contender,
    *,
    settings: Settings,
    sampling: Sampling,
    question: str,
    client_for: Callable[[Settings], openai.AsyncOpenAI],
    observer: AnswerObserver,
    stop: Callable[[], bool],
    session_id: str | None,
    facts: FactsCache | None,
) -> AnswerOutcome:
    """One contender's answer to the question, asked on its own (no earlier turns)."""
    own = contender.settings(settings)
    chosen = contender.sampling(sampling)
    messages = ([{"role": "system", "content": chosen.system_prompt}] if chosen.system_prompt else []) + [
        {"role": "user", "content": question}
    ]
    request = new_request(
        own, chosen, messages, engine=await engine_facts(own, facts), question=question, session_id=session_id
    )
    return await stream_answer(client_for(own), own, request, observer=observer, stop=stop)
