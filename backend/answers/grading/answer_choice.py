"""Reads which option a sentence picks, for questions that offer options ("Which is bigger, 9.11 or 9.8?").

An answer restates the options, so naming one is not picking it: "9.11 is bigger than 9.8" picks 9.11,
"9.11 is smaller than 9.8" and "9.8 > 9.11" pick 9.8, "the bigger number is 9.8" picks 9.8. Options in
arithmetic ("9.8 - 9.11 = 0.69") are worked, not picked. A sentence that names one option only picks it.
"""

from __future__ import annotations

import re
from typing import cast

from backend.answers.grading.answer_values import Reading, Value
from backend.answers.grading.question_set import Question

WORDS = {
    "bigger": (
        "bigger|larger|greater|higher|more|biggest|largest|greatest|highest",
        "smaller|less|lower|fewer|smallest|least|lowest",
    ),
    "youngest": ("youngest|younger", "oldest|older"),
}
WORDS["smaller"] = WORDS["bigger"][::-1]
VERB = r"(?:is|are|was|would be|will be)"


def mentions(question: Question, text: str) -> list[Value]:
    """Where each option is named (the right one also in its other accepted forms), arithmetic left out."""
    found = []
    for option in question.options:
        forms = {option, *(question.accept if option == question.expected else ())}
        for form in forms:
            for m in re.finditer(rf"(?<![\w.\-/]){re.escape(form)}(?![\w/]|\.\d)", text, re.IGNORECASE):
                near = text[max(0, m.start() - 2) : m.start()] + text[m.end() : m.end() + 2]
                if not re.search(r"[-+*/×=÷]", near.replace(" -", " ") if form.startswith("-") else near):
                    found.append(Value(m.group(), option, m.start()))
    return sorted(found, key=lambda v: v.start)


def _claims(question: Question, text: str, found: list[Value]) -> list[str]:
    """Options that comparisons in the text pick, in order."""
    same, opposite = WORDS.get(question.direction, WORDS["bigger"])
    picked = []
    for i, v in enumerate(found):
        after = text[v.start + len(v.text) : found[i + 1].start if i + 1 < len(found) else len(text)]
        before = text[found[i - 1].start + len(found[i - 1].text) if i else 0 : v.start]
        for word, flip in ((same, False), (opposite, True)):
            says = re.match(rf"\W*{VERB}\s+(?:the\s+|a\s+)?(not\s+)?(?:[\w.]+\s+)?(?:{word})\b", after, re.IGNORECASE)
            names = re.search(rf"\b(?:{word})\b(?:\s+\w+){{0,3}}\s*(?:{VERB}|:)\s*$", before, re.IGNORECASE)
            if says or names:
                picked.append(_side(question, _option(v), flip != bool(says and says.group(1))))
        sign = re.match(r"\s*([<>])", after)
        if sign and i + 1 < len(found):
            bigger_first = sign.group(1) == ">"
            picked.append(_side(question, _option(v), bigger_first == (question.direction == "smaller")))
    return [p for p in picked if p]


def _option(value: Value) -> str:
    """The option a mention names: mentions() keys each value by its option, a str."""
    return cast(str, value.key)


def _side(question: Question, option: str, other: bool) -> str:
    """The option named, or with two options, the other one ("9.11 is smaller" picks 9.8)."""
    if not other:
        return option
    rest = [o for o in question.options if o != option]
    return rest[0] if len(rest) == 1 else ""


def read_choice(question: Question, text: str, *, hedge: re.Pattern, marked: bool = False) -> Reading | None:
    found = mentions(question, text)
    if not found:
        return _outside_options(question, text, marked=marked)
    claims = _claims(question, text, found)
    if claims:
        return Reading(Value(claims[-1], claims[-1], found[-1].start))
    if len({v.key for v in found}) == 1 and (marked or _plainly_named(text, found[0])):
        return Reading(None, "hedges") if hedge.search(text) else Reading(found[0])
    equal = re.search(r"\b(?:are|is)\s+(?:equal|the same)\b", text) if len({v.key for v in found}) > 1 else None
    if equal:  # "both -3 and -7 are equal": an answer, and not one of the options
        return Reading(Value("equal", "equal", equal.start()))
    result = re.search(r"=\s*(-?\d+(?:[./]\d+)?)[^=]*$", text) if marked else None
    if result:  # "9.8 - 9.11 = 1.11. This is the answer."
        return Reading(Value(result.group(1), result.group(1), result.start(1)))
    return Reading(None, "hedges") if hedge.search(text) and len(found) > 1 else None


def _plainly_named(text: str, mention: Value) -> bool:
    """ "Carl.", "It is 9.8.": the option is the sentence's point, not a passing mention ("subtract -3 from 3")."""
    short = len(re.findall(r"\w+", text)) <= 6
    return short or re.search(r"\b(?:is|are|it's)\s*(?:the\s+)?$", text[: mention.start]) is not None


def _outside_options(question: Question, text: str, *, marked: bool) -> Reading | None:
    """An answer that is none of the options: "The answer is 1.11", "The youngest brother is Elsa"."""
    same = WORDS.get(question.direction, WORDS["bigger"])[0]
    named = re.search(
        rf"\b(?:{same})\b(?:\s+\w+){{0,2}}\s+{VERB}\s+(?!the\b|a\b|not\b)([A-Z]\w*(?:\s+[A-Z]\w*)?)", text
    )
    other = re.search(r"-?\d+(?:[./]\d+)?", text) if marked else None
    found = named or other
    return (
        Reading(Value(found.group(found.lastindex or 0), found.group(found.lastindex or 0), found.start()))
        if found
        else None
    )
