"""`python -m backend qa board` and `python -m backend qa compare`: options, messages and exit codes.

Exit codes: 0 printed; 1 nothing to rate (the selection left no battle) or the history could not be
read; 2 bad input (a votes file's line, an accuracy-run file, an option), with a one-line message.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

from backend.errors import CompareInputError, HistoryUnavailable
from backend.qa.compare.battles import Battle, battles_from_records, load_battle_records, read_votes, select
from backend.qa.compare.board import board_json, board_text, build_board
from backend.qa.compare.runs import read_run
from backend.qa.compare.runs_report import comparison_json, comparison_text
from backend.qa.export import history_source
from backend.settings import SettingsError, load_settings

NO_BATTLES = "no battles stored yet"


def board_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m backend qa board",
        description=(
            "Bradley-Terry ratings (Elo scale, mean 1000) with 95% bootstrap intervals, from votes on battles"
        ),
    )
    parser.add_argument(
        "--votes",
        type=Path,
        help="JSONL, one battle a line: "
        '{"a": NAME, "b": NAME, "winner": "a"|"b"|"tie"|"both_bad", "tag": TAG}'
        " (default: the battles stored in the history)",
    )
    parser.add_argument(
        "--json", action="store_true", help='print {"battles": N, "ratings": {NAME: {"rating", "low", "high"}}} only'
    )
    parser.add_argument(
        "--exclude-ties",
        action="store_true",
        help="leave out ties and both-bad votes (else each counts half a win for both)",
    )
    parser.add_argument("--tag", help="only battles on questions with this tag")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap rounds (default 1000)")
    parser.add_argument("--seed", type=int, help="seed of the bootstrap (default: random)")
    return parser


def compare_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m backend qa compare",
        description=("two accuracy runs (the JSON `qa run` writes) question by question, B against A"),
    )
    parser.add_argument("run_a", type=Path, help="run A's JSON (results/qa-run-*.json)")
    parser.add_argument("run_b", type=Path, help="run B's JSON")
    parser.add_argument(
        "--changed-only",
        action="store_true",
        help="list only questions whose result changed (the totals stay those of all)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    return parser


def qa_compare_command(action: str, argv: list[str]) -> int:
    """Entry from backend/cli.py for `qa board ...` and `qa compare ...`."""
    return board_command(argv) if action == "board" else compare_command(argv)


def _fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _stored_battles() -> list[Battle]:
    """The voted battles in the history database the settings name ([] if it does not exist yet)."""
    source = history_source(load_settings())
    if isinstance(source, Path) and not source.exists():
        return []
    return battles_from_records(load_battle_records(source))


def _heading(battles: list[Battle], args: argparse.Namespace) -> str:
    tag = f" on questions tagged {args.tag}" if args.tag else ""
    ties = "ties (and both bad) left out" if args.exclude_ties else "a tie (or both bad) counts half a win for each"
    return (
        f"{len(battles)} battle(s){tag}, {ties}. Bradley-Terry ratings on the Elo scale (mean 1000), "
        f"95% intervals from {args.bootstrap} bootstrap rounds"
    )


def _why_none(battles: list[Battle], args: argparse.Namespace) -> str:
    tags = sorted({b.tag for b in battles if b.tag})
    if args.tag and not any(b.tag == args.tag for b in battles):
        return f"no battle has the tag {args.tag!r} (tags: {', '.join(tags) or 'none'})"
    return f"all {len(battles)} battle(s){' with that tag' if args.tag else ''} are ties, left out by --exclude-ties"


def board_command(argv: list[str]) -> int:
    args = board_parser().parse_args(argv)
    if args.bootstrap < 1:
        return _fail("--bootstrap must be at least 1", 2)
    try:
        battles = read_votes(args.votes) if args.votes else _stored_battles()
    except (CompareInputError, SettingsError) as err:
        return _fail(str(err), 2)
    except (HistoryUnavailable, sqlite3.Error) as err:
        return _fail(str(err), 1)
    if not battles:
        print(json.dumps({"battles": 0, "ratings": {}}) if args.json else NO_BATTLES)
        return 0
    chosen = select(battles, tag=args.tag, exclude_ties=args.exclude_ties)
    if not chosen:
        return _fail(_why_none(battles, args), 1)
    board = build_board(chosen, rounds=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps(board_json(board)))
        for note in board.notes:
            print(f"note: {note}", file=sys.stderr)
    else:
        print(board_text(board, heading=_heading(chosen, args)))
    return 0


def compare_command(argv: list[str]) -> int:
    args = compare_parser().parse_args(argv)
    try:
        a, b = read_run(args.run_a), read_run(args.run_b)
    except CompareInputError as err:
        return _fail(str(err), 2)
    if args.json:
        print(json.dumps(comparison_json(a, b, changed_only=args.changed_only), ensure_ascii=False))
    else:
        print(comparison_text(a, b, changed_only=args.changed_only))
    return 0
