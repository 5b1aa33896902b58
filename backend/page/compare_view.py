"""Compare mode on the page: two answers streaming side by side as A and B, a blind vote, the reveal.

The element is public/elements/Battle.jsx. Until the vote its props hold no contender names, stats
or grades (the browser sees props); the vote (buttons or keys 1-4) comes back as the
"battle_vote" action, and the reveal then shows names, stats, grades and answer ids (for Replay).
Once both answers end, the view is driven by the comparison's record (backend/qa/compare/
comparison.py), stored then and again with the vote; a resumed chat rebuilds the view from it.
"""

from __future__ import annotations

import time
from typing import Any

import chainlit as cl
from chainlit.data import get_data_layer

from backend.answers.stream import LiveAnswer
from backend.qa.compare.comparison import LABELS, REASONS, VOTES, Comparison
from backend.records import RECORD_KEY

UPDATE_EVERY = 0.25  # seconds between updates of the element while the answers stream
INTRO = "**Blind comparison.** Two answers, A and B, in random order."


class SideObserver:
    """Feeds one side's streamed text into the view."""

    def __init__(self, view: CompareView, label: str) -> None:
        self.view, self.label = view, label

    async def on_reasoning(self, text: str, live: LiveAnswer) -> None:
        self.view.sides[self.label]["reasoning"] = live.reasoning
        await self.view.refresh()

    async def on_answer(self, text: str, live: LiveAnswer) -> None:
        self.view.sides[self.label]["answer"] = live.answer
        await self.view.refresh()


class CompareView:
    """One comparison's message and element; `record` is set once both answers have ended."""

    def __init__(self, message: cl.Message, battle_id: str, *, record: dict[str, Any] | None = None) -> None:
        self.message, self.id, self.record, self.shown_at = message, battle_id, record, 0.0
        self.sides = {label: {"reasoning": "", "answer": "", "done": False, "note": ""} for label in LABELS}
        if record is not None:
            self._sides_from_record()
        # A url, so that Chainlit writes no session file for it: the page loads the JSX by name anyway.
        self.element = cl.CustomElement(
            name="Battle", props=self.props(), display="inline", url="/public/elements/Battle.jsx"
        )
        message.elements = [self.element]  # type: ignore[list-item]  # chainlit types it with an unbound TypeVar

    @classmethod
    def resumed(cls, message: cl.Message, record: dict[str, Any], element_id: str) -> CompareView:
        """The view of a stored comparison whose element the page already shows (from the thread)."""
        view = cls(message, str(record.get("id")), record=record)
        view.element.id, view.element.for_id = element_id, message.id
        return view

    @property
    def phase(self) -> str:
        if self.record is None:
            return "streaming"
        return "vote" if self.record.get("vote") is None else "revealed"

    def observers(self) -> dict[str, SideObserver]:
        return {label: SideObserver(self, label) for label in LABELS}

    def props(self) -> dict[str, Any]:
        props: dict[str, Any] = {
            "battle_id": self.id,
            "phase": self.phase,
            "sides": self.sides,
            "reason_chips": list(REASONS),
            "latest": True,
        }
        if self.phase == "revealed" and self.record is not None:
            answers = self.record.get("answers") or {}
            props["reveal"] = {
                label: {
                    "name": (self.record.get("contenders") or {}).get(label, ""),
                    "stats": answers.get(label, {}).get("stats_line", "did not start"),
                    "grade": answers.get(label, {}).get("grade_line", ""),
                    "answer_id": f"{self.message.id}:{label}",
                }
                for label in LABELS
            }
            props.update(vote_words=VOTES.get(self.record["vote"], ""), reasons=self.record.get("reasons") or [])
        return props

    def _sides_from_record(self) -> None:
        for label, answer in (self.record or {}).get("answers", {}).items():
            self.sides[label] = {
                "reasoning": answer.get("reasoning", ""),
                "answer": answer.get("answer", ""),
                "done": True,
                "note": answer.get("note", ""),
            }
        for side in self.sides.values():
            side["done"] = True

    async def open(self) -> None:
        await self.message.send()
        self.shown_at = time.monotonic()

    async def refresh(self, *, now: bool = False) -> None:
        if not now and time.monotonic() - self.shown_at < UPDATE_EVERY:
            return
        self.shown_at = time.monotonic()
        self.element.props = self.props()
        await cl.context.emitter.send_element(self.element.to_dict())  # no file per update, unlike update()

    async def ended(self, comparison: Comparison) -> None:
        """Both answers are over: notes under each, the vote opens, the record (no vote yet) is stored."""
        self.record = comparison.record(answer_ids={label: f"{self.message.id}:{label}" for label in LABELS})
        self._sides_from_record()
        await self.refresh(now=True)
        if (store := get_data_layer()) is not None:  # not through the page: no names before the vote
            step = self.message.to_dict()
            step["metadata"] = {RECORD_KEY: self.record}
            await store.update_step(step)
            await store.create_element(self.element)  # its props, so that a resumed chat shows it

    async def reveal(self) -> None:
        record = self.record or {}
        names = " · ".join(f"{label}: {name}" for label, name in (record.get("contenders") or {}).items())
        self.message.content = f"{INTRO} {names} · your vote: {VOTES.get(record.get('vote') or '', '')}"
        self.message.metadata = {RECORD_KEY: record}
        await self.message.update()
        await self.refresh(now=True)
        if (store := get_data_layer()) is not None:
            await store.create_element(self.element)


async def restore(thread: dict[str, Any], views: dict[str, CompareView]) -> None:
    """A resumed chat's comparisons still open to a vote (the page shows every one from the thread)."""
    elements = {e.get("forId"): e.get("id") for e in thread.get("elements") or [] if e.get("type") == "custom"}
    for step in thread.get("steps") or []:
        record = (step.get("metadata") or {}).get(RECORD_KEY) or {}
        if record.get("kind") == "battle" and record.get("vote") is None and step["id"] in elements:
            message = cl.Message(content=step.get("output") or INTRO, id=step["id"])
            view = CompareView.resumed(message, record, elements[step["id"]])
            views[view.id] = view
