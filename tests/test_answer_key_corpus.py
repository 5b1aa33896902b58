"""How the answer key grades a hand-labelled corpus: agreement and confusion matrix, printed.

tests/data/graded_answers.jsonl holds answers to the keyed questions: the embedded model's real answers
(scripts/collect_model_answers.py, several temperatures) and hand-written hard cases, each labelled
correct / incorrect / unclear by a person reading it (docs/grading.md says how). Goals: no answer that
is not right graded correct, and at least 97% agreement. Run with `-s` to see the matrix.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from backend.answers.grading.answer_key import OUTCOMES, grade
from backend.answers.grading.question_set import load_questions

CORPUS = Path(__file__).with_name("data") / "graded_answers.jsonl"


def load_corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def confusion(rows: list[dict]) -> tuple[Counter, list[tuple[dict, str]]]:
    """(label, grade) counts, and the rows where the grader differs from the label."""
    questions = {q.id: q for q in load_questions()}
    counts: Counter = Counter()
    differ = []
    for row in rows:
        # A model answer cut off at the token limit is graded as such (only an explicit answer counts).
        got = grade(questions[row["question_id"]], row["answer"], cut_off=row.get("finish_reason") == "length").outcome
        counts[row["label"], got] += 1
        if got != row["label"]:
            differ.append((row, got))
    return counts, differ


def matrix_table(counts: Counter) -> str:
    lines = ["| label \\ grader | " + " | ".join(OUTCOMES) + " | total |", "|---" * (len(OUTCOMES) + 2) + "|"]
    for label in OUTCOMES:
        row = [counts[label, got] for got in OUTCOMES]
        lines.append(f"| {label} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    return load_corpus()


def test_the_corpus_is_big_enough_labelled_and_says_where_each_answer_came_from(corpus: list[dict]) -> None:
    keyed = {q.id for q in load_questions()}
    assert len(corpus) >= 150
    assert len({row["id"] for row in corpus}) == len(corpus)
    for row in corpus:
        assert row["question_id"] in keyed and row["label"] in OUTCOMES and row["source"], row["id"]
    model = [row for row in corpus if row["source"] != "hand-written"]
    temperatures = {row["source"].split("temperature=")[1].split()[0] for row in model}
    assert len(model) >= 100 and len(temperatures) >= 3
    assert len(corpus) - len(model) >= 40
    assert set(Counter(row["label"] for row in corpus)) == set(OUTCOMES)


def test_the_grader_agrees_with_the_labels(corpus: list[dict]) -> None:
    counts, differ = confusion(corpus)
    agreement = 1 - len(differ) / len(corpus)
    print(f"\n{len(corpus)} answers, agreement {agreement:.1%}\n{matrix_table(counts)}")
    for row, got in differ:
        print(f"- {row['id']} ({row['question_id']}): labelled {row['label']}, graded {got}: {row['answer'][:160]!r}")
    wrongly_correct = [(row["id"], row["label"]) for row, got in differ if got == "correct"]
    assert not wrongly_correct, f"graded correct but labelled otherwise: {wrongly_correct}"
    assert agreement >= 0.97
