"""Reads the one value a text states as its answer, by the question's kind, and compares it with the key.

A sentence can name several values ("9.8 - 9.11 = 0.69", "the ball costs 5 cents and the bat $1.05").
The value it states as the answer is, in order: the only one; the result after the last "="; the one
next to what the question asks about ("ball", not "bat"); the only one the question did not already
name. For a choice, the option a comparison names ("9.8 is bigger than 9.11", "9.11 is smaller").
A sentence naming several without settling on one is a hedge if it says "or", "maybe"...; otherwise
it states no answer. Numbers are compared by math-verify, so 9.8 = 9.80, $0.05 = 5 cents = 5/100.
"""

from __future__ import annotations

import logging
import re
from functools import cache

from backend.answers.grading import answer_values as av
from backend.answers.grading.answer_choice import mentions, read_choice
from backend.answers.grading.answer_values import Reading
from backend.answers.grading.question_set import Question

NUMERIC_KINDS = ("number", "money", "duration")
HEDGE = re.compile(
    r"\b(?:or|either|could be|might be|may be|maybe|perhaps|possibly|not sure|unsure|"
    r"depends|approximately|around|about)\b",
    re.IGNORECASE,
)
# An answer that is still an expression in an unknown: "The answer is x + 1.00."
UNSOLVED = re.compile(r"^\W*\$?\d*[xyn]\b(?!\s*=)", re.IGNORECASE)
YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def values_of(question: Question, text: str) -> list[av.Value]:
    """Every value of the question's kind in the text, in order."""
    kind = question.kind
    if kind == "number":
        return av.numbers(text)
    if kind == "money":
        return av.money(text)
    if kind == "duration":
        return av.durations(text, default_unit=_unit_of(question.expected))
    if kind in ("word", "yes/no"):
        found = av.phrases(text, question.accept, question.reject)
        yes_no = YES_NO.match(text) if kind == "yes/no" else None
        return ([av.Value(yes_no.group(1), yes_no.group(1).lower(), yes_no.start(1))] if yes_no else []) + found
    readers = {"weekday": av.weekdays, "date": av.dates, "ordinal": av.ordinals, "letter": av.letters}
    return readers[kind](text)


def names_values(question: Question, text: str) -> bool:
    """Whether the text names any value of the question's kind (an option, for a choice)."""
    return bool(mentions(question, text) if question.kind == "choice" else values_of(question, text))


def _unit_of(expected: str) -> str:
    unit = re.search(r"[a-z]+", expected.lower())
    return unit.group() if unit else "second"


def read(question: Question, text: str, *, marked: bool = False) -> Reading | None:
    """The value `text` states as the answer; None if it states none. `marked`: text follows "answer:"."""
    if question.kind == "choice":
        return read_choice(question, text, hedge=HEDGE, marked=marked)
    if marked and question.kind in NUMERIC_KINDS and UNSOLVED.match(text):
        return Reading(None, "unsolved")
    found = values_of(question, text)
    if question.kind in ("weekday", "date") and not marked:
        named = {v.key for v in values_of(question, question.question)}
        found = [v for v in found if v.key not in named]  # "If today is Friday, ...": restated, not answered
    if not found or (not marked and _about_something_else(question, text, found)):
        return None
    if question.kind in ("word", "yes/no"):
        return Reading(found[-1])  # the phrase it ends on: "many say steel, but they weigh the same"
    picked = _pick(question, text, found)
    if picked is not None:
        return Reading(picked)
    if marked:
        return Reading(found[0])  # "The answer is 8 (2 + 6)": what the marker names comes first
    return Reading(None, "hedges") if HEDGE.search(text) else None


def _about_something_else(question: Question, text: str, found: list[av.Value]) -> bool:
    """A sentence whose values are all said of other quantities ("the bat costs $1.05") states no answer."""
    return bool(question.not_about) and all(_owner(question, text, v) in question.not_about for v in found)


def read_other_quantity(question: Question, text: str) -> Reading | None:
    """A value the text gives for another quantity of the question, one the question did not name."""
    asked = {v.key for v in values_of(question, question.question)}
    for v in reversed(values_of(question, text)):
        owner = _owner(question, text, v)
        if owner in question.not_about and v.key not in asked:
            return Reading(v, said_of=owner)
    return None


def _pick(question: Question, text: str, found: list[av.Value]) -> av.Value | None:
    if len({v.key for v in found}) == 1:
        return found[0]
    explicit = [v for v in found if v.explicit]  # "100 machines take 5 minutes": the 5 has a unit
    if explicit and len(explicit) < len(found) and len({v.key for v in explicit}) == 1:
        return explicit[0]
    equals = text.rfind("=")
    after = [v for v in found if v.start > equals] if equals >= 0 else []
    if after:
        return after[0]
    if question.about and (mine := _next_to_subject(question, text, found)) is not None:
        return mine
    asked = {v.key for v in values_of(question, question.question)}
    for group in (explicit, found):  # "5 minutes for 5 machines, 20 times as long: 100 minutes"
        new = [v for v in group if v.key not in asked]
        if len({v.key for v in new}) == 1:
            return new[0]
    return None


CLAUSE_END = re.compile(r"[,;:()]|\b(?:and|so|which|but|while|because)\b", re.IGNORECASE)


def _owner(question: Question, text: str, value: av.Value) -> str | None:
    """What a value is said of, in its clause: the word of `about` / `not_about` before it, else after it.

    "The bat costs $1.05 and the ball costs $0.05": bat, ball. "5 cents is the ball's price": ball.
    """
    cuts = [m.start() for m in CLAUSE_END.finditer(text)]
    start = max((c for c in cuts if c < value.start), default=0)
    end = min((c for c in cuts if c >= value.start + len(value.text)), default=len(text))
    words = [
        (m.start(), w)
        for w in (*question.about, *question.not_about)
        for m in re.finditer(rf"\b{re.escape(w)}\b", text[start:end], re.IGNORECASE)
    ]
    before = [(at, w) for at, w in words if start + at < value.start]
    after = [(at, w) for at, w in words if start + at >= value.start]
    return max(before)[1] if before else min(after)[1] if after else None


def _next_to_subject(question: Question, text: str, found: list[av.Value]) -> av.Value | None:
    """The value said of what is asked about: "the ball costs 5 cents, the bat $1.05" -> 5 cents."""
    mine = [v for v in found if _owner(question, text, v) in question.about]
    return mine[0] if len({v.key for v in mine}) == 1 else None  # "2 or 3 r's" settles on neither


def matches(question: Question, value: av.Value) -> bool:
    """Whether a value read is the key's answer (any of the forms the key accepts)."""
    if question.kind in ("word", "yes/no"):
        # A phrase of the key is ("accept" | "reject", phrase); a bare yes / no is the word itself.
        return value.key[0] == "accept" if isinstance(value.key, tuple) else value.key == question.expected.lower()
    if question.kind == "choice":
        return value.key == question.expected
    if question.kind == "date":
        return isinstance(value.key, tuple) and any(_same_date(value.key, k) for k in _expected_keys(question))
    if question.kind in NUMERIC_KINDS:
        got = _parse(str(value.key))
        from math_verify import verify  # imported when first needed: it brings sympy (seconds to import)

        return bool(got) and any(verify(_parse(k), got, timeout_seconds=None) for k in _expected_keys(question))
    return value.key in _expected_keys(question)


@cache
def _expected_keys(question: Question) -> tuple:
    if question.kind == "letter":
        return tuple({form.lower() for form in (question.expected, *question.accept)})
    return tuple({v.key for form in (question.expected, *question.accept) for v in values_of(question, form)})


def _same_date(got: tuple, want: tuple) -> bool:
    return got[:2] == want[:2] and (got[2] is None or want[2] is None or got[2] == want[2])


@cache
def _parse(expression: str) -> list:
    from math_verify import ExprExtractionConfig, parse

    # The texts math-verify sees are numbers we wrote ourselves ("(5)/100"): no parse can hang, so its
    # signal-based timeout (which only works on the main thread) is off, and so is its warning about that.
    logging.getLogger("math_verify").setLevel(logging.ERROR)

    parsed: list = parse(expression, extraction_config=[ExprExtractionConfig()], parsing_timeout=None)
    return parsed
