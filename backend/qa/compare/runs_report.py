"""What `qa compare` prints: a table of questions with both runs' figures, or one JSON object."""

from __future__ import annotations

from typing import Any

from backend.qa.compare.runs import (
    QuestionChange,
    Run,
    Tally,
    accuracy_difference,
    compare_questions,
    difference_interval,
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _points(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.0f} pts"


def _side(tally: Tally | None) -> str:
    """right/graded, accuracy and interval of one run, in a fixed width of 30."""
    if tally is None:
        return f"{'not asked':>9}{'':21}"
    low, high = tally.interval
    interval = f"{_pct(low):>4} - {_pct(high):<4}" if tally.graded else f"{'-':>4}   {'':4}"
    return f"{f'{tally.correct}/{tally.graded}':>9} {_pct(tally.accuracy):>5}  {interval}  "


def describe(run: Run) -> str:
    """One line saying which run this is: file, model, start, samples and sampling."""
    about, sampling = run.about, run.about.get("sampling") or {}
    parts = [str(run.path), str(about.get("served_model") or "model ?"), str(about.get("started_at") or "")[:16]]
    if about.get("samples"):
        parts.append(f"{about['samples']} sample(s)")
    settings = [
        f"{name} {sampling[key]}"
        for key, name in (("temperature", "temperature"), ("top_p", "top-p"), ("max_tokens", "max tokens"))
        if key in sampling
    ]
    return " · ".join(p for p in parts + [", ".join(settings)] if p)


def comparison_text(a: Run, b: Run, *, changed_only: bool = False) -> str:
    """The table: per question both runs and B - A, then the pooled totals and the majority votes."""
    changes = compare_questions(a, b)
    shown = [c for c in changes if c.changed] if changed_only else changes
    width = max(len("question"), *(len(c.question_id) for c in changes))
    head = (
        f"{'question':<{width}}  {'A right':>9} {'acc':>5}  {'95% interval':<13}  "
        f"{'B right':>9} {'acc':>5}  {'95% interval':<13}  {'B - A':>8}  change"
    )
    rule = "-" * len(head)
    lines = [f"A: {describe(a)}", f"B: {describe(b)}", "", head, rule]
    lines += [
        f"{c.question_id:<{width}}  {_side(c.a)}{_side(c.b)}{_points(c.difference):>8}  {c.change}".rstrip()
        for c in shown
    ]
    if changed_only and not shown:
        lines.append("(no question changed)")
    total_a, total_b = a.total, b.total
    spread = difference_interval(total_a, total_b)
    spread_text = f"  (95% interval {_points(spread[0])} to {_points(spread[1])})" if spread else ""
    difference = accuracy_difference(total_a, total_b)
    (right_a, of_a), (right_b, of_b) = a.majority, b.majority
    lines += [
        rule,
        f"{'all':<{width}}  {_side(total_a)}{_side(total_b)}{_points(difference):>8}{spread_text}",
        f"majority vote right: A on {right_a} of {of_a} question(s), B on {right_b} of {of_b}",
        f"changed: {sum(c.changed for c in changes)} of {len(changes)} question(s)",
    ]
    return "\n".join(lines)


def _run_dict(run: Run) -> dict[str, Any]:
    right, of = run.majority
    return {
        "file": str(run.path),
        "model": run.about.get("served_model"),
        "started_at": run.about.get("started_at"),
        "samples": run.about.get("samples"),
        "sampling": run.about.get("sampling"),
        **run.total.as_dict(),
        "majority_correct": right,
        "questions": of,
    }


def comparison_json(a: Run, b: Run, *, changed_only: bool = False) -> dict[str, Any]:
    """Both runs' totals, B - A with its 95% interval, and per question both runs' figures and the change."""
    changes = compare_questions(a, b)
    total_a, total_b = a.total, b.total
    spread = difference_interval(total_a, total_b)
    difference = accuracy_difference(total_a, total_b)
    shown: list[QuestionChange] = [c for c in changes if c.changed] if changed_only else changes
    return {
        "a": _run_dict(a),
        "b": _run_dict(b),
        "difference": difference,
        "difference_ci95": list(spread) if spread else None,
        "changed": sum(c.changed for c in changes),
        "questions": [c.as_dict() for c in shown],
    }
