"""The command line's parser: one subcommand each, with its own options (`python -m backend -h`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from backend.settings import PROJECT_ROOT

DELEGATED = ("board", "compare")  # `qa board|compare` parse their own options (backend/qa/compare/cli.py)
SIMPLE = {
    "run": "vLLM and the chat page in the foreground (what start_service.sh runs; the default)",
    "serve": "vLLM only, in the foreground, until Ctrl-C",
    "start": "vLLM only, in the background; returns once /health answers",
    "stop": "stop what `start` started",
    "status": "is the server up, what does it serve, what phase is it in",
    "check": "validate the settings and print vLLM's command line; start nothing",
    "prepare": "what scripts/setup.sh runs: check the settings, install what vLLM needs, print the page count",
}


def build_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m backend", description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, words in SIMPLE.items():
        commands.add_parser(name, help=words, description=words)
    export = commands.add_parser("export", help="stored answers as JSONL or Markdown, or the votes as pairs")
    _export_options(export)
    export.add_argument("--user", help="only this user's chats (with --votes: the votes this user cast)")
    _user_parser(commands)
    _qa_parser(commands)
    replay = commands.add_parser("replay", help="send a stored answer's stamped request again and compare")
    replay.add_argument("answer_id", help="the answer's id: `answer_id` in `python -m backend export`")
    replay.add_argument("--json", action="store_true", help="print the whole comparison as JSON")
    return parser


def _user_parser(commands: argparse._SubParsersAction) -> None:
    user = commands.add_parser("user", help="add, remove or list login users")
    actions = user.add_subparsers(dest="action", metavar="ACTION")
    add = actions.add_parser("add", help="add a user, or change a user's password (asked for)")
    add.add_argument("name")
    add.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    actions.add_parser("remove", help="remove a user").add_argument("name")
    actions.add_parser("list", help="list the users")


def _qa_parser(commands: argparse._SubParsersAction) -> None:
    qa = commands.add_parser("qa", help="accuracy runs, the leaderboard, run against run")
    actions = qa.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="every keyed question --samples times; store, grade, print accuracy")
    _qa_run_options(run)
    run.add_argument("--user", help="whose sidebar gets the run's chat (default: the local user)")
    actions.add_parser("board", add_help=False, help="Bradley-Terry ratings from the votes (-h for its options)")
    actions.add_parser("compare", add_help=False, help="RUN_A RUN_B: two accuracy runs (-h for its options)")


def _export_options(group: argparse.ArgumentParser) -> None:
    group.add_argument(
        "--format", choices=["jsonl", "md", "csv"], default="jsonl", help="export format (csv: with --votes)"
    )
    group.add_argument("--out", default="-", help="export file (default: standard output)")
    group.add_argument(
        "--human-verdicts",
        "--feedback-only",
        action="store_true",
        help="export only answers with a human verdict (Right/Wrong under the answer)",
    )
    group.add_argument(
        "--disagreements",
        action="store_true",
        help="export only answers whose human verdict differs from the answer key's",
    )
    group.add_argument(
        "--votes",
        action="store_true",
        help="export the Compare votes as preference pairs "
        "(JSONL for TRL's DPOTrainer) or, with --format csv, as a table",
    )
    group.add_argument(
        "--include-ties",
        action="store_true",
        help='export --votes: also ties and both-bad votes, marked "tie": true, neither chosen',
    )


def _qa_run_options(group: argparse.ArgumentParser) -> None:
    group.add_argument("--samples", type=int, default=5, help="answers per question (default 5)")
    group.add_argument(
        "--questions", type=Path, help="questions file, as backend/answers/grading/questions.json (default: it)"
    )
    group.add_argument("--parallel", type=int, default=4, help="answers asked at once (default 4)")
    group.add_argument("--max-tokens", type=int, help="answer token budget (default: a new chat's)")
    group.add_argument("--temperature", type=float, help="sampling temperature (default: a new chat's)")
    group.add_argument("--top-p", type=float, help="top-p (default: a new chat's)")
    group.add_argument("--seed", type=int, help="seed of sample 1; sample k gets seed + k - 1 (default: random)")
    group.add_argument("--results", type=Path, default=PROJECT_ROOT / "results", help="folder for the JSON and PNG")
