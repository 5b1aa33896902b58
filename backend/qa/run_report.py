"""What an accuracy run reports: a table on the terminal, a JSON file and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backend.qa.accuracy import QuestionAccuracy, overall

NO_MATPLOTLIB = (
    "no chart written: matplotlib is not installed in this environment "
    "(install it with `.venv/bin/python -m pip install matplotlib`; the JSON has every figure)"
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def table(questions: list[QuestionAccuracy]) -> str:
    """Per question: answers graded, right, wrong, unclear, accuracy, 95% interval, majority vote."""
    width = max([len("question"), *(len(q.question_id) for q in questions)])
    head = f"{'question':<{width}}  {'n':>3} {'right':>5} {'wrong':>5} {'unclear':>7} {'acc':>5}  {'95% interval':>12}  majority"
    lines = [head, "-" * len(head)]
    for q in questions:
        low, high = q.interval
        vote = "right" if q.majority_correct else ("-" if not q.graded else "wrong")
        errors = f"  ({q.count('error')} error(s), not graded)" if q.count("error") else ""
        lines.append(
            f"{q.question_id:<{width}}  {q.graded:>3} {q.correct:>5} {q.count('incorrect'):>5} "
            f"{q.count('unclear'):>7} {_pct(q.accuracy):>5}  {_pct(low):>5} - {_pct(high):<4}  {vote}{errors}"
        )
    total = overall(questions)
    low, high = total["ci95"]
    lines += [
        "-" * len(head),
        (
            f"{'all':<{width}}  {total['graded']:>3} {total['correct']:>5} {'':>5} {'':>7} "
            f"{_pct(total['accuracy']):>5}  {_pct(low):>5} - {_pct(high):<4}"
        ),
        (
            f"majority vote: right on {total['majority_correct']} of {total['questions']} question(s) "
            f"({_pct(total['majority_accuracy'])})"
        ),
    ]
    return "\n".join(lines)


def write_json(path: Path, questions: list[QuestionAccuracy], about: dict[str, Any]) -> None:
    payload = {**about, "overall": overall(questions), "questions": [q.as_dict() for q in questions]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_chart(path: Path, questions: list[QuestionAccuracy], *, title: str) -> str:
    """Accuracy per question with its 95% interval; returns what was done, in words."""
    try:
        import matplotlib
    except ImportError:
        return NO_MATPLOTLIB
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    shown = [q for q in questions if q.graded]
    if not shown:
        return "no chart written: no answer was graded"
    fig, ax = plt.subplots(figsize=(8, 1.8 + 0.3 * len(shown)))
    rows = list(range(len(shown)))[::-1]  # the first question at the top
    values = [q.accuracy or 0.0 for q in shown]
    low = [v - q.interval[0] for v, q in zip(values, shown, strict=True)]
    high = [q.interval[1] - v for v, q in zip(values, shown, strict=True)]
    colours = ["#2e7d32" if q.majority_correct else "#c62828" for q in shown]
    ax.barh(rows, values, xerr=[low, high], color=colours, alpha=0.75, capsize=3, ecolor="#333")
    ax.set_yticks(rows, [f"{q.question_id} ({q.correct}/{q.graded})" for q in shown], fontsize=8)
    total = overall(questions)
    ax.axvline(total["accuracy"] or 0, color="#555", linestyle="--", linewidth=1)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax.set_xlabel(
        f"accuracy: bar = share right, whisker = 95% Wilson interval, green = majority vote right;\n"
        f"dashed = all answers ({_pct(total['accuracy'])}); majority vote right on "
        f"{total['majority_correct']} of {total['questions']} question(s)",
        fontsize=8,
    )
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"wrote {path}"
