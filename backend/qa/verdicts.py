"""The two verdicts on an answer: the answer key's (automatic) and the QA user's own (human).

The human verdict is Chainlit's feedback on the answer, made explicit on the page: its two buttons
read "Right" and "Wrong" (public/qa.css, .chainlit/translations/en-US.json) and take a comment.
Chainlit stores it in the feedbacks table (1 = right, 0 = wrong) beside the answer's record, shows it
again when the chat is resumed, and lets the user change or clear it; exports read it from there.
Using Chainlit's own feedback, rather than actions of ours, is what puts it under every answer
(regenerated ones and those of accuracy runs included) and keeps it through a restart.
"""

from __future__ import annotations

from typing import Any

RIGHT, WRONG = "right", "wrong"


def human_verdict(value: int | None, comment: str | None) -> dict[str, str] | None:
    """The stored feedback row as a human verdict: {"verdict": "right" | "wrong", "comment": ...}."""
    if value is None:
        return None
    return {"verdict": RIGHT if value == 1 else WRONG, "comment": comment or ""}


def key_outcome(verdict: dict[str, Any] | None) -> str | None:
    """correct, incorrect or unclear; records stored before outcomes existed hold only `correct`."""
    if not verdict:
        return None
    return verdict.get("outcome") or ("correct" if verdict.get("correct") else "incorrect")


def agreement(verdict: dict[str, Any] | None, human: dict[str, str] | None) -> str | None:
    """agree / disagree when both verdicts exist, else None. An unclear key verdict disagrees with any
    human one: the person could tell right from wrong, the key could not."""
    outcome = key_outcome(verdict)
    if outcome is None or human is None:
        return None
    same = (outcome, human["verdict"]) in (("correct", RIGHT), ("incorrect", WRONG))
    return "agree" if same else "disagree"


def describe_key(verdict: dict[str, Any]) -> str:
    """The answer key's verdict in the page's words: outcome, the final answer read, the expected one."""
    outcome = key_outcome(verdict)
    read = verdict.get("read")
    said = (
        f"final answer read as {read}"
        if read not in (None, "")
        else "no final answer found"
        if outcome == "unclear"
        else "value read not stored"
    )
    return f"answer key: {outcome} — {said}; expected {verdict.get('expected')}"


def describe_human(human: dict[str, str]) -> str:
    comment = f" — {human['comment']}" if human["comment"] else ""
    return f"human verdict: {human['verdict']}{comment}"
