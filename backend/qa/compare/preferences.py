"""`python -m backend export --votes`: the stored comparisons' votes as preference pairs, or as a table.

JSONL, one voted comparison with a winner a line, in the conversational preference format that TRL's
DPOTrainer reads: `prompt` (the messages the chosen answer was asked with: its stamp's request
messages), `chosen` and `rejected` (each one assistant message), plus who answered
(`chosen_model`, `rejected_model`), both stamps, the vote, reasons, comment, user and time.
Ties and both-bad votes have no chosen side: left out, or with `include_ties` written with
`"tie": true`, `answer_a` / `answer_b` in place of chosen / rejected (every line has `"tie"`, so
`dataset.filter(lambda row: not row["tie"])` keeps the pairs). CSV: one row per voted comparison,
ties included, for a spreadsheet. Comparisons not voted on yet are skipped.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.errors import HistoryUnavailable
from backend.qa.compare.battles import TIES, load_battle_records
from backend.qa.history_pg import PgHistory

SIDES = {"a": ("A", "B"), "b": ("B", "A")}  # vote -> (chosen label, rejected label)
CSV_COLUMNS = (
    "question",
    "contender A",
    "contender B",
    "vote",
    "winner",
    "reasons",
    "comment",
    "user",
    "voted at",
    "answer A",
    "answer B",
    "battle id",
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet could run as a formula


@dataclass
class Tally:
    """What happened to the stored comparisons."""

    written: int = 0
    not_voted: int = 0
    ties: int = 0  # ties and both-bad votes left out
    incomplete: int = 0  # voted, but an answer is missing (stopped before it began)

    def summary(self, what: str) -> str:
        """E.g. "wrote 2 preference line(s) to votes.jsonl; skipped 1 not voted yet, ..."."""
        skipped = [f"{self.not_voted} not voted yet"]
        if self.ties:
            skipped.append(f"{self.ties} tie(s) or both bad (--include-ties writes them)")
        if self.incomplete:
            skipped.append(f"{self.incomplete} with an answer missing")
        return f"wrote {self.written} {what}; skipped {', '.join(skipped)}"


def _prompt(answer: dict[str, Any], question: str) -> list[dict[str, str]]:
    """The messages this answer was asked with, as role and content (the question alone if unstamped)."""
    sent = ((answer.get("stamp") or {}).get("request") or {}).get("messages") or []
    messages = [
        {"role": str(m.get("role", "")), "content": _text(m.get("content"))} for m in sent if isinstance(m, dict)
    ]
    return messages or [{"role": "user", "content": question}]


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _reply(answer: dict[str, Any]) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": str(answer.get("answer") or "")}]


def _facts(battle: dict[str, Any]) -> dict[str, Any]:
    return {
        "vote": battle.get("vote"),
        "reasons": list(battle.get("reasons") or []),
        "comment": battle.get("comment") or "",
        "battle_id": battle.get("id"),
        "question": battle.get("question") or "",
        "user": battle.get("user") or "",
        "voted_at": battle.get("voted_at"),
    }


def preference_pair(battle: dict[str, Any]) -> dict[str, Any]:
    """One comparison won by A or B as a TRL preference line (KeyError if an answer is missing)."""
    first, second = SIDES[battle["vote"]]
    answers, names, question = battle["answers"], battle.get("contenders") or {}, battle.get("question") or ""
    chosen, rejected = answers[first], answers[second]
    prompt = _prompt(chosen, question)
    return {
        "prompt": prompt,
        "chosen": _reply(chosen),
        "rejected": _reply(rejected),
        "chosen_model": names.get(first),
        "rejected_model": names.get(second),
        "chosen_stamp": chosen.get("stamp") or {},
        "rejected_stamp": rejected.get("stamp") or {},
        "same_prompt": prompt == _prompt(rejected, question),
        "tie": False,
        **_facts(battle),
    }


def tie_line(battle: dict[str, Any]) -> dict[str, Any]:
    """A tie or both-bad comparison: both answers as A and B, neither chosen (KeyError if one is missing)."""
    answers, names, question = battle["answers"], battle.get("contenders") or {}, battle.get("question") or ""
    a, b = answers["A"], answers["B"]
    prompt = _prompt(a, question)
    return {
        "prompt": prompt,
        "answer_a": _reply(a),
        "answer_b": _reply(b),
        "a_model": names.get("A"),
        "b_model": names.get("B"),
        "a_stamp": a.get("stamp") or {},
        "b_stamp": b.get("stamp") or {},
        "same_prompt": prompt == _prompt(b, question),
        "tie": True,
        **_facts(battle),
    }


def jsonl_lines(battles: list[dict[str, Any]], *, include_ties: bool) -> tuple[list[str], Tally]:
    """The JSONL lines of the voted comparisons, and what was skipped."""
    lines, tally = [], Tally()
    for battle in battles:
        vote = battle.get("vote")
        if vote is None:
            tally.not_voted += 1
            continue
        if vote in TIES and not include_ties:
            tally.ties += 1
            continue
        try:
            line = tie_line(battle) if vote in TIES else preference_pair(battle)
        except (KeyError, TypeError, AttributeError):
            tally.incomplete += 1
            continue
        lines.append(json.dumps(line, ensure_ascii=False))
    tally.written = len(lines)
    return lines, tally


def _cell(value: Any) -> str:
    """Text a spreadsheet shows as text: one that would start a formula gets a leading apostrophe."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_row(battle: dict[str, Any]) -> list[str]:
    names, answers, vote = battle.get("contenders") or {}, battle.get("answers") or {}, battle.get("vote")
    winner = names.get(SIDES[vote][0], "") if vote in SIDES else ""
    facts = _facts(battle)
    row = [
        facts["question"],
        names.get("A"),
        names.get("B"),
        vote,
        winner,
        "; ".join(facts["reasons"]),
        facts["comment"],
        facts["user"],
        facts["voted_at"],
        (answers.get("A") or {}).get("answer"),
        (answers.get("B") or {}).get("answer"),
        facts["battle_id"],
    ]
    return [_cell(value) for value in row]


def csv_text(battles: list[dict[str, Any]]) -> tuple[str, Tally]:
    """A header and one row per voted comparison (ties included: the vote column says which)."""
    voted = [b for b in battles if b.get("vote") is not None]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    writer.writerows(csv_row(battle) for battle in voted)
    return out.getvalue(), Tally(written=len(voted), not_voted=len(battles) - len(voted))


def votes_command(path: Path | PgHistory, args: argparse.Namespace) -> int:
    """`export --votes` from backend/cli.py: 2 for options that do not go with it."""
    clash = (
        "--format csv is for --votes"
        if not args.votes
        else "--votes writes jsonl or csv, not md"
        if args.format == "md"
        else "--human-verdicts and --disagreements are for answers, not --votes"
        if args.human_verdicts or args.disagreements
        else ""
    )
    if clash:
        print(f"error: {clash}", file=sys.stderr)
        return 2
    return export_votes(path, fmt=args.format, out=args.out, include_ties=args.include_ties, user=args.user)


def export_votes(path: Path | PgHistory, *, fmt: str, out: str, include_ties: bool, user: str | None) -> int:
    """The command: 0 written, 1 nothing to write or the history unreadable (said on stderr)."""
    try:
        battles = load_battle_records(path)
    except (HistoryUnavailable, sqlite3.Error) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    battles = [b for b in battles if user is None or b.get("user") == user]
    if not battles:
        who = f" voted by {user}" if user else ""
        print(
            f"error: no comparisons{who} stored in {path}: nothing was written. Ask a question in Compare "
            "mode (the composer's Answer: Compare), vote, then export.",
            file=sys.stderr,
        )
        return 1
    if fmt == "csv":
        text, tally = csv_text(battles)
        what = "comparison(s) as CSV rows"
    else:
        lines, tally = jsonl_lines(battles, include_ties=include_ties)
        text, what = "".join(line + "\n" for line in lines), "preference line(s)"
    if not tally.written:
        hint = "every vote was a tie or both bad (--include-ties writes them)" if tally.ties else "vote first"
        print(f"{tally.summary(what)}\nerror: nothing was written: {hint}", file=sys.stderr)
        return 1
    _write(text, out, bom=fmt == "csv")
    print(tally.summary(what if out == "-" else f"{what} to {out}"), file=sys.stderr)
    return 0


def _write(text: str, out: str, *, bom: bool) -> None:
    """To standard output, or to a file (CSV with a byte order mark, so that Excel reads it as UTF-8)."""
    if out == "-":
        sys.stdout.write(text)
    else:
        Path(out).write_text(text, encoding="utf-8-sig" if bom else "utf-8", newline="")
