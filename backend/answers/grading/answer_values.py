"""Reads the values of one kind (numbers, amounts of money, durations, weekdays, dates...) in a text.

Each value keeps where it was found and a key to compare it by: numeric keys are expressions
("5/100" for five cents, "47*86400" for 47 days in seconds) that math-verify compares
(backend/answers/grading/answer_compare.py); the other kinds have plain keys (a weekday's name, a date's tuple).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNITS = {
    "ones": [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ],
    "tens": ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"],
}
SMALL = {w: i for i, w in enumerate(UNITS["ones"])} | {w: 10 * i for i, w in enumerate(UNITS["tens"]) if w != "_"}
WORD_NUMBER = re.compile(
    r"\b(?:(?:a|one|two|three|four|five|six|seven|eight|nine)[ -]hundred(?:[ -](?:and[ -])?)?)?"
    r"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[ -](?:one|two|three|"
    r"four|five|six|seven|eight|nine)\b)?|" + "|".join(sorted(UNITS["ones"], key=len, reverse=True)) + r")?\b",
    re.IGNORECASE,
)
TIMES_WORDS = ("once", "twice", "thrice")
# "the bigger one", "each one", "one of them": not the number 1.
PRONOUN_ONE = re.compile(
    r"\b(?:the|this|that|which|each|every|any|no|some|another)\s+(?:\w+\s+)?\||\|\s*of\b", re.IGNORECASE
)
# Digits, not part of a word, a ratio (5:1) or a longer number.
DIGITS = r"(?<![\w.,/:])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?(?![\w/]|[.,:]\d)"
NUMBER = re.compile(DIGITS)
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
SECONDS = {"second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600, "day": 86400, "week": 604800}


@dataclass(frozen=True)
class Value:
    text: str  # as written
    key: str | tuple  # what it is compared by
    start: int  # where it starts in the text read
    explicit: bool = True  # False for a bare number read as money or time ("5" for 5 minutes)


@dataclass(frozen=True)
class Reading:
    """The value a text states as its answer; None with `unsettled` saying why when it states none."""

    value: Value | None
    unsettled: str = ""  # "hedges" (names several answers) or "unsolved" ("the answer is x + 1.00")
    said_of: str = ""  # set when the value is given for another quantity than the one asked ("bat")


def word_number(text: str) -> int | None:
    """ "thirty-six" -> 36, "one hundred eighty" -> 180, "a hundred" -> 100; None if it is not one."""
    total, words = 0, re.split(r"[ -]+", text.lower().strip())
    for word in words:
        if word == "hundred":
            total = max(total, 1) * 100
        elif word in SMALL:
            total += SMALL[word]
        elif word not in ("a", "and"):
            return None
    return total if words and words != ["a"] else None


def numbers(text: str) -> list[Value]:
    """Numbers written in digits (1,000  9.80  1/3  -7) or words (three, thirty-six), in order."""
    found = [
        Value(m.group(), m.group().replace(",", ""), m.start())
        for m in NUMBER.finditer(text)
        if not re.match(r"(?:st|nd|rd|th)\b", text[m.end() : m.end() + 2]) and not _in_algebra(text, m)
    ]
    for m in re.finditer(r"\b(once|twice|thrice)\b", text, re.IGNORECASE):  # "appears twice": 2 times
        found.append(Value(m.group(), str(["once", "twice", "thrice"].index(m.group().lower()) + 1), m.start()))
    for m in WORD_NUMBER.finditer(text):
        if m.group().lower() == "one" and PRONOUN_ONE.search(text[: m.start()] + "|" + text[m.end() : m.end() + 4]):
            continue
        if m.group().strip() and (n := word_number(m.group())) is not None:
            found.append(Value(m.group(), str(n), m.start()))
    return sorted(found, key=lambda v: v.start)


# A bare number followed by a noun counts something ("100 machines", "4 pencils"): it is no amount or time.
COUNTED = re.compile(
    r"\s+(?!(?:and|or|to|is|are|was|in|for|of|if|so|but|then|because|as|the|each|x)\b)[a-z]{2,}", re.IGNORECASE
)
# A number in an expression with an unknown ("x + 1.00", "2x") is working, not a value.
ALGEBRA = re.compile(r"\b\d*[xyn]\s*[-+*/]\s*$|^\s*[-+*/]\s*\d*[xyn]\b")


def _counts_something(text: str, n: Value) -> bool:
    return bool(COUNTED.match(text, n.start + len(n.text)))


def _in_algebra(text: str, m: re.Match) -> bool:
    return bool(ALGEBRA.search(text[max(0, m.start() - 6) : m.start()]) or ALGEBRA.match(text[m.end() : m.end() + 6]))


def money(text: str) -> list[Value]:
    """Amounts in dollars: $1.05, 1.05 dollars, 5 cents, five cents, 5¢; a bare number counts as dollars."""
    found = []
    for n in numbers(text):
        if n.text.lower() in TIMES_WORDS:  # "once" is a count of times, never an amount (hypothesis found it)
            continue
        after, before = text[n.start + len(n.text) :][:12].lower(), text[: n.start].rstrip()[-1:]
        cents = re.match(r"\s*(?:cents?\b|¢)", after)
        key = f"({n.key})/100" if cents else n.key
        end = n.start + len(n.text) + (cents.end() if cents else 0)
        dollars = before == "$" or re.match(r"\s*dollars?\b", after)
        if not (cents or dollars) and _counts_something(text, n):
            continue
        found.append(
            Value(("$" if before == "$" else "") + text[n.start : end], key, n.start, explicit=bool(cents or dollars))
        )
    return found


def durations(text: str, default_unit: str) -> list[Value]:
    """Durations in seconds: 5 minutes, five minutes, 300 seconds, day 47; a bare number is in `default_unit`."""
    found = []
    for n in numbers(text):
        if n.text.lower() in TIMES_WORDS:  # a count of times, not a length of time
            continue
        after = re.match(
            r"\s*(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?)\b",
            text[n.start + len(n.text) :],
            re.IGNORECASE,
        )
        before = re.search(r"\b(second|minute|hour|day|week)\s*$", text[: n.start], re.IGNORECASE)
        if not (after or before) and _counts_something(text, n):
            continue
        unit = (after.group(1) if after else before.group(1) if before else default_unit).lower()
        factor = SECONDS.get(unit.rstrip("s"), SECONDS.get(unit, 1))
        end = n.start + len(n.text) + (after.end() if after else 0)
        found.append(Value(text[n.start : end], f"({n.key})*{factor}", n.start, explicit=bool(after or before)))
    return found


def ordinals(text: str) -> list[Value]:
    """Places: second, 2nd, place 2."""
    pattern = r"\b(?:(" + "|".join(ORDINALS) + r")|(\d+)(?:st|nd|rd|th)|place\s+(\d+))\b"
    return [
        Value(
            m.group(),
            str(ORDINALS.index(m.group(1).lower()) + 1 if m.group(1) else m.group(2) or m.group(3)),
            m.start(),
        )
        for m in re.finditer(pattern, text, re.IGNORECASE)
    ]


def weekdays(text: str) -> list[Value]:
    return [
        Value(m.group(), m.group().lower(), m.start())
        for m in re.finditer(r"\b(?:" + "|".join(WEEKDAYS) + r")\b", text, re.IGNORECASE)
    ]


def dates(text: str) -> list[Value]:
    """Dates as (month, day, year or None): March 1, 2023 / 1 March 2023 / 2023-03-01 / March 1st."""
    month = r"(" + "|".join(MONTHS) + r")"
    day, year = r"(\d{1,2})(?:st|nd|rd|th)?", r"(?:,?\s+(\d{4}))?"
    found = []
    for m in re.finditer(rf"\b{month}\s+{day}\b{year}", text, re.IGNORECASE):
        found.append(Value(m.group(), (MONTHS.index(m.group(1).lower()) + 1, int(m.group(2)), m.group(3)), m.start()))
    for m in re.finditer(rf"\b{day}\s+(?:of\s+)?{month}\b{year}", text, re.IGNORECASE):
        found.append(Value(m.group(), (MONTHS.index(m.group(2).lower()) + 1, int(m.group(1)), m.group(3)), m.start()))
    for m in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        found.append(Value(m.group(), (int(m.group(2)), int(m.group(3)), m.group(1)), m.start()))
    return sorted(found, key=lambda v: v.start)


def letters(text: str) -> list[Value]:
    """A single letter named as one: 'z', "Z", the letter z, ... is Z, or a whole answer of one letter."""
    pattern = r"^\W*([A-Za-z])\W*$|[\"'‘“]([A-Za-z])[\"'’”]|\bletter\s+([A-Za-z])\b|\bis\s+([A-Za-z])\s*[.!]?\s*$"
    return [
        Value(letter, letter.lower(), m.start())
        for m in re.finditer(pattern, text)
        for letter in [next(g for g in m.groups() if g)]
    ]


def phrases(text: str, accept: tuple[str, ...], reject: tuple[str, ...]) -> list[Value]:
    """The key's phrases found in the text: ("accept", phrase) or ("reject", phrase); longest first, so
    "not all flowers are roses" is not read as "all flowers are roses"."""
    found: list[Value] = []
    forms = sorted([("reject", f) for f in reject] + [("accept", f) for f in accept], key=lambda vf: -len(vf[1]))
    for stance, form in forms:
        for m in re.finditer(rf"(?<![\w-]){re.escape(form)}(?![\w-])", text, re.IGNORECASE):
            if not any(v.start < m.end() and m.start() < v.start + len(v.text) for v in found):
                found.append(Value(m.group(), (stance, form.lower()), m.start()))
    return sorted(found, key=lambda v: v.start)
