"""The answer key: finding the final answer, reading it by kind, comparing it with the key.

Rules are tested here one by one; how well they grade real answers is measured on the labelled corpus
in tests/test_answer_key_corpus.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.answers.grading.answer_key import Grade, check, find_question, grade
from backend.answers.grading.final_answer import clean, find, last_boxed, sentences
from backend.answers.grading.question_set import KINDS, load_questions, starters
from backend.qa.export import to_jsonl, to_markdown

BIGGER = "Which number is bigger, 9.11 or 9.8?"
BALL = "A bat and a ball cost $1.10 in total. The bat costs $1.00 more than the ball. How much does the ball cost?"
WIDGETS = "If 5 machines take 5 minutes to make 5 widgets, how long would 100 machines take to make 100 widgets?"
WORDS = [
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
]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def outcome(question: str, answer: str) -> str:
    graded = check(question, answer)
    assert graded is not None
    return graded.outcome


def in_words(n: int) -> str:
    if n < 20:
        return WORDS[n]
    return TENS[n // 10] + ("" if n % 10 == 0 else "-" + WORDS[n % 10])


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("The bigger number is **9.8**.", "correct"),
        ("9.8 is larger, since 0.80 > 0.11", "correct"),
        ("9.11 is bigger than 9.8.", "incorrect"),  # names 9.8 but picks 9.11
        ("9.11 is smaller than 9.8.", "correct"),  # names 9.11 first but picks 9.8
        ("The answer is 9.81.", "incorrect"),
        ("9.8 - 9.11 = 1.11, the difference between the two. In this case, the answer is 1.11.", "incorrect"),
        ("It could be 9.11 or 9.8.", "unclear"),
        ("I am not sure.", "unclear"),
        ("The numbers are 9.11 and 9.8.", "unclear"),
    ],
)
def test_bigger_decimal(answer: str, expected: str) -> None:
    assert outcome(BIGGER, answer) == expected


def test_the_issue_example_reads_the_final_answer_and_says_what_it_read() -> None:
    answer = "9.8 - 9.11 = 1.11, which is the difference between the two numbers. In this case, the answer is 1.11."
    assert check(BIGGER, answer).describe() == "Answer key: incorrect — final answer read as 1.11; expected 9.8"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("The answer is 9.11. Wait, 9.8 = 9.80 and 0.80 > 0.11, so 9.8 is bigger.", "correct"),
        ("9.8 is bigger. Actually, no: 9.11 is bigger because it has more digits.", "incorrect"),
        ("The answer is 9.8. Actually, this is a classic trick question.", "correct"),  # "actually" changes nothing
    ],
)
def test_a_change_of_mind_is_read_where_it_settles(answer: str, expected: str) -> None:
    assert outcome(BIGGER, answer) == expected


def test_an_explicit_answer_wins_over_later_working_and_boxed_wins_over_both() -> None:
    assert outcome(BALL, "Final answer: $0.05. Check: the bat is $1.05 and $1.05 + $0.05 = $1.10.") == "correct"
    assert outcome(BALL, "So x = 0.10. \\boxed{0.05}") == "correct"
    assert last_boxed("a \\boxed{\\frac{1}{2}} b \\boxed{3}") == "3"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("The ball costs 5 cents, so the bat costs $1.05.", "correct"),
        ("The bat costs $1.05 and the ball costs $0.05.", "correct"),
        ("The ball costs $0.10 and the bat costs $1.00.", "incorrect"),
        ("The bat costs $1.05.", "incorrect"),  # the right working, but the price of the wrong thing
        ("The total is $1.10 and the bat costs $1.00 more than the ball.", "unclear"),  # restates the question
        ("$1.10 - $1.00 = $0.10, so the ball costs $0.10.", "incorrect"),
    ],
)
def test_a_value_for_another_quantity_is_not_the_answer(answer: str, expected: str) -> None:
    assert outcome(BALL, answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("100 machines would take 5 minutes to make 100 widgets.", "correct"),  # numbers of the question, restated
        ("It would take 100 minutes.", "incorrect"),
        ("The answer is 5 hours.", "incorrect"),  # the right number in the wrong unit
        ("300 seconds.", "correct"),
    ],
)
def test_durations_compare_with_their_units(answer: str, expected: str) -> None:
    assert outcome(WIDGETS, answer) == expected


@settings(max_examples=60, deadline=None)
@given(st.decimals(min_value=Decimal("0.01"), max_value=Decimal(999), places=2), st.integers(0, 3))
def test_a_number_equals_itself_with_trailing_zeros_and_differs_from_others(value: Decimal, zeros: int) -> None:
    question = next(q for q in load_questions() if q.id == "strawberry")
    text = f"{value}" + ("0" * zeros if "." in f"{value}" else "")
    read_as_three = Decimal(text) == 3
    assert grade(question, f"The answer is {text}.").outcome == ("correct" if read_as_three else "incorrect")


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 99))
def test_money_in_cents_dollars_and_words_are_the_same_amount(cents: int) -> None:
    question = next(q for q in load_questions() if q.id == "bat-and-ball")
    forms = [f"${cents / 100:.2f}", f"{cents} cents", f"{in_words(cents)} cents", f"{cents / 100:.2f} dollars"]
    outcomes = {grade(question, f"The ball costs {form}.").outcome for form in forms}
    assert outcomes == {"correct" if cents == 5 else "incorrect"}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 600))
def test_minutes_and_seconds_are_the_same_duration(minutes: int) -> None:
    question = next(q for q in load_questions() if q.id == "widgets")
    said = {grade(question, f"It takes {form}.").outcome for form in (f"{minutes} minutes", f"{minutes * 60} seconds")}
    assert said == {"correct" if minutes == 5 else "incorrect"}


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii", exclude_categories=("Nd",)), max_size=200))
def test_nothing_is_correct_by_default(text: str) -> None:
    """Text without a digit never grades correct on a number question (it may on a word question)."""
    for question in load_questions():
        if question.kind in ("number", "money", "duration") and not re.search(
            r"(?i)\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|sixty|once|twice|thrice)",
            text,
        ):
            assert grade(question, text).outcome != "correct"


@pytest.mark.parametrize("question", load_questions(), ids=lambda q: q.id)
def test_every_key_accepts_its_own_forms_and_rejects_a_blank(question) -> None:
    for form in (question.expected, *question.accept):
        graded = grade(question, f"The answer is {form}.")
        assert graded.outcome == "correct", (form, graded)
    assert grade(question, "").outcome == "unclear"
    assert grade(question, "I don't know.").outcome == "unclear"


def test_the_page_line_starts_with_the_outcome_and_the_record_keeps_what_was_read() -> None:
    for answer, start in [
        ("The bigger number is 9.8.", "Answer key: correct — final answer read as 9.8"),
        ("9.11 is bigger.", "Answer key: incorrect — final answer read as 9.11"),
        ("Maybe 9.11 or 9.8.", "Answer key: unclear — the final answer names more than one"),
        ("No idea.", "Answer key: unclear — no final answer found"),
    ]:
        graded = check(BIGGER, answer)
        assert isinstance(graded, Grade) and graded.describe().startswith(start)
        assert graded.describe().endswith("expected 9.8")
        assert graded.correct is (graded.outcome == "correct")


def test_questions_not_in_the_key_get_no_grade() -> None:
    assert check("Tell me a joke", "Why did the chicken...") is None
    assert check(BIGGER, "   ").outcome == "unclear"


def test_key_matching_ignores_case_and_spacing_of_the_question() -> None:
    assert check("  which number is BIGGER,   9.11 or 9.8? ", "9.8").correct
    assert find_question("what is the capital of   france?").id == "capital-france"


def test_the_question_set_covers_thirty_questions_of_every_kind_and_keeps_the_starters() -> None:
    questions = load_questions()
    assert len(questions) >= 30 and len({q.id for q in questions}) == len(questions)
    assert {q.kind for q in questions} == set(KINDS)
    assert [q.label for q in starters()] == ["9.11 or 9.8?", "Bat and ball", "Count the r's", "Machines and widgets"]
    assert BIGGER in [q.question for q in starters()]
    for q in questions:
        assert q.expected and q.accept, q.id
        assert q.kind != "choice" or q.expected in q.options, q.id


def test_extraction_splits_sentences_but_not_decimals_and_drops_markup() -> None:
    assert sentences("It is 9.8. Not 9.11!\nDone") == ["It is 9.8.", "Not 9.11!", "Done"]
    assert clean("**Answer:** $\\text{5 cents}$") == "Answer: $5 cents$"
    found = find("I think 3. Wait, it is 4. Good luck!", lambda part, how: re.search(r"\d", part) and how)
    assert found is not None and found.text == "Wait, it is 4." and found.how == "claim"


def test_the_export_shows_the_outcome_the_value_read_and_the_expected_answer() -> None:
    graded = asdict(check(BIGGER, "9.8 - 9.11 = 1.11. In this case, the answer is 1.11."))
    record = {
        "thread_id": "t",
        "thread_name": "QA",
        "user": "local",
        "answer_id": "a",
        "question_id": "bigger-decimal",
        "question": BIGGER,
        "sample": 1,
        "outcome": "complete",
        "reasoning": "",
        "answer": "…",
        "shown": "…",
        "verdict": graded,
        "human_verdict": None,
        "agreement": None,
        "stamp": {},
    }
    assert "- answer key: incorrect — final answer read as 1.11; expected 9.8" in to_markdown([record])
    exported = json.loads(to_jsonl([record]))["verdict"]
    assert (exported["outcome"], exported["read"], exported["expected"]) == ("incorrect", "1.11", "9.8")
    # A record stored before the three outcomes (only "correct") still exports.
    old = {**record, "verdict": {"question_id": "bigger-decimal", "expected": "9.8", "correct": True}}
    assert "- answer key: correct — value read not stored; expected 9.8" in to_markdown([old])


def test_a_cut_off_answer_counts_only_an_explicit_or_a_repeated_answer() -> None:
    banana = next(q for q in load_questions() if q.id == "banana-a")
    assert grade(banana, "The answer is 3. To check, we count b, a, n", cut_off=True).outcome == "correct"
    unfinished = grade(banana, "The letter a appears 3 times, but wait, we must also cou", cut_off=True)
    assert unfinished.outcome == "unclear" and "cut off" in unfinished.describe()
    looping = "Each a is 2.\n" + "There are 2 a's.\n" * 5 + "There are"
    assert grade(banana, looping, cut_off=True).outcome == "incorrect"
