"""Grades the final answer of an answer against the repository's answer key (backend/answers/grading/questions.json).

Only the final answer counts, never what the text says on the way: backend/answers/grading/final_answer.py finds
it, backend/answers/grading/answer_compare.py reads its value by the question's kind and compares it with the key.
Three outcomes: correct, incorrect, unclear (no final answer found, or it hedges). Nothing is correct
by default. Measured against hand-labelled answers in tests/test_answer_key_corpus.py (docs/grading.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backend.answers.grading import answer_compare, final_answer
from backend.answers.grading.answer_values import Reading
from backend.answers.grading.question_set import Question, load_questions

OUTCOMES = ("correct", "incorrect", "unclear")
UNSETTLED = {
    "hedges": "the final answer names more than one answer",
    "unsolved": "the final answer is no value",
    "cut off": "the answer was cut off before it stated a final answer",
}


@dataclass(frozen=True)
class Grade:
    question_id: str
    expected: str
    outcome: str  # one of OUTCOMES
    read: str | None  # the final answer as read (the value), None when none was found
    found_in: str | None = None  # the sentence it was read from (or the \boxed{} content)
    # Where it was read: "boxed", "marked" ("answer:"), "conclusion" ("So, ..."), "claim", "repeated" (a
    # cut-off answer looping on one answer); for an unclear grade with found_in, why: "hedges",
    # "unsolved"; "cut off" for a cut-off answer that stated none; None when nothing was found.
    how: str | None = None

    @property
    def correct(self) -> bool:
        return self.outcome == "correct"

    def describe(self) -> str:
        """The page line; it starts with "Answer key: <outcome>" so that tools can read it."""
        if self.read is not None:
            return f"Answer key: {self.outcome} — final answer read as {_short(self.read)}; expected {self.expected}"
        if self.found_in is not None:
            return (
                f"Answer key: unclear — {UNSETTLED.get(self.how or '', UNSETTLED['hedges'])} "
                f"(“{_short(self.found_in)}”); expected {self.expected}"
            )
        if self.how == "cut off":
            return f"Answer key: unclear — {UNSETTLED['cut off']}; expected {self.expected}"
        return f"Answer key: unclear — no final answer found; expected {self.expected}"


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[*_`]", "", text).lower().split())


def find_question(text: str) -> Question | None:
    wanted = _normal(text)
    return next((q for q in load_questions() if _normal(q.question) == wanted), None)


def _repeated(question: Question, answer_text: str, times: int = 3) -> final_answer.FinalAnswer | None:
    """A cut-off answer stuck repeating one answer ("2 cookies each." x 20) has settled on it."""
    last = final_answer.sentences(final_answer.clean(answer_text))[-times - 1 : -1]  # the very last may be cut
    readings = [answer_compare.read(question, s) for s in last]
    keys = {r.value.key for r in readings if r is not None and r.value is not None}
    if len(last) == times and all(r is not None and r.value is not None for r in readings) and len(keys) == 1:
        return final_answer.FinalAnswer(last[-1], "repeated", readings[-1])
    return None


def check(question_text: str, answer_text: str, *, cut_off: bool = False) -> Grade | None:
    """The grade of the answer's final answer when the question is in the key, else None.

    `cut_off`: the answer stopped at the token limit; only an answer it stated explicitly ("the answer
    is ...", \\boxed{}) counts then, as where it was heading is unknown.
    """
    question = find_question(question_text)
    if question is None:
        return None
    return grade(question, answer_text, cut_off=cut_off)


def grade(question: Question, answer_text: str, *, cut_off: bool = False) -> Grade:
    def reader(part: str, how: str) -> Reading | None:
        if cut_off and how not in ("boxed", "marked"):
            return None
        reading = answer_compare.read(question, part, marked=how in ("boxed", "marked"))
        if (
            reading is None
            and how == "conclusion"
            and question.kind not in answer_compare.NUMERIC_KINDS
            and answer_compare.names_values(question, part)
        ):
            # "So, Wednesday ... and Friday is Monday": it concludes on no one answer. (Numbers in a
            # conclusion are often working, "So, 25% of 80 is 0.25 * 80", so those are read on.)
            return Reading(None, "hedges")
        return reading

    final = final_answer.find(answer_text, reader)
    if final is None and cut_off:
        final = _repeated(question, answer_text)
    if final is None and question.not_about and not cut_off:
        # No value for what was asked, but one for something else ("The bat costs $1.05"): wrong quantity.
        final = final_answer.find(answer_text, lambda part, how: answer_compare.read_other_quantity(question, part))
    if final is None:
        return Grade(question.id, question.expected, "unclear", None, how="cut off" if cut_off else None)
    value, said_of = final.reading.value, final.reading.said_of
    if value is None:  # it hedges between several answers, or its answer is still an expression
        return Grade(question.id, question.expected, "unclear", None, final.text, final.reading.unsettled)
    if said_of:
        read = f"{value.text.strip()} (said of “{said_of}”, not of what was asked)"
        return Grade(question.id, question.expected, "incorrect", read, final.text, final.how)
    outcome = "correct" if answer_compare.matches(question, value) else "incorrect"
    return Grade(question.id, question.expected, outcome, value.text.strip(), final.text, final.how)
