"""Command line: `python -m backend [COMMAND]` (run, serve, start, stop, status, check, prepare, export, user,
qa, replay; run when none is given), entered through backend/__main__.py. `python -m backend COMMAND -h`
explains one; the README lists the common ones.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
from pydantic import SecretStr

from backend.engine.vllm_command import build_launch, resolve_device
from backend.readiness import Awaited, Readiness, process_gone, wait_ready
from backend.server.pidfile import our_process, write_pidfile
from backend.server_status import commands_api_key, read_status
from backend.settings import PROJECT_ROOT, Settings, SettingsError, load_settings
from backend.stop_request import StopRequest, die_of


def _pidfile(settings: Settings):
    return settings.log_dir / f"serve-{settings.vllm_port}.pid"


def _preflight_ok(settings: Settings) -> bool:
    """The history's and users file's problems, said on stderr; False if one of them stops a start."""
    from backend.qa.setup import preflight

    problems = preflight(settings)
    for problem in problems:
        print(problem, file=sys.stderr)
    return not any(p.startswith("error") for p in problems)


def cmd_check(settings: Settings) -> int:
    spec = build_launch(settings, api_key="<hidden>")
    if not _preflight_ok(settings):
        return 2
    print(f"settings OK; device {spec.device}; vLLM command:")
    print("  " + shlex.join(spec.argv))
    return 0


def cmd_prepare(settings: Settings) -> int:
    """scripts/setup.sh's one Python step: the settings' problems (on stderr), the server environment and
    the embedded model when missing, then the number of chat page processes to plan for (on stdout)."""
    from backend.server.install import ensure_installed
    from backend.server.page_pool import page_workers

    if not _preflight_ok(settings):
        return 2
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the page count alone: setup.sh reads it
        ensure_installed(settings)
    print(page_workers(settings, resolve_device(settings)))
    return 0


def cmd_start(settings: Settings) -> int:
    """Spawn `serve` detached (its own session, so this shell may exit) and wait until healthy."""
    pidfile = _pidfile(settings)
    log = settings.log_dir / f"serve-{settings.vllm_port}.out"
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "backend", "serve"],
            cwd=PROJECT_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    write_pidfile(pidfile, proc.pid)
    # `serve` applies the start-up timeout itself and exits when it passes; the margin covers its own start.
    awaited = Awaited(f"{settings.server_url}/health", settings.startup_timeout + 60, gone=process_gone(proc))
    if wait_ready(awaited, interval=1).state is Readiness.READY:
        print(f"vLLM is up at {settings.server_url} (pid {proc.pid}); `python -m backend stop` stops it")
        return 0
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)  # ours, just started: it stops what it launched
        proc.wait(timeout=60)
    pidfile.unlink(missing_ok=True)
    print(f"vLLM did not start:\n{log.read_text()[-3000:]}", file=sys.stderr)
    return 1


def cmd_stop(settings: Settings) -> int:
    pidfile = _pidfile(settings)
    if not pidfile.exists():
        print("nothing to stop: no server was started with `python -m backend start`")
        return 0
    proc, why_not = our_process(pidfile)
    if proc is None:
        pidfile.unlink(missing_ok=True)
        print(f"nothing stopped: {why_not}")
        return 0
    proc.terminate()  # the serve process stops vLLM's whole group, then exits
    try:
        proc.wait(timeout=60)
    except psutil.TimeoutExpired:
        print(f"pid {proc.pid} did not stop within 60 s; it is left running", file=sys.stderr)
        return 1
    pidfile.unlink(missing_ok=True)
    print("stopped")
    return 0


def _healthy(settings: Settings) -> bool:
    try:
        return httpx.get(f"{settings.server_url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def cmd_status(settings: Settings) -> int:
    report: dict[str, object] = {"url": settings.server_url, "healthy": _healthy(settings)}
    published = read_status(settings.status_file)
    if published:
        report["launcher"] = published.describe()
    if report["healthy"]:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            report["version"] = httpx.get(f"{settings.server_url}/version", timeout=2).json().get("version")
    print(json.dumps(report, indent=2))
    return 0 if report["healthy"] else 3


def cmd_export(settings: Settings, args: argparse.Namespace) -> int:
    from backend.qa.export import history_source, load_records, render
    from backend.qa.history_db import HistoryUnavailable

    if args.votes or args.format == "csv":
        from backend.qa.compare.preferences import votes_command

        return votes_command(history_source(settings), args)
    try:
        records = load_records(
            history_source(settings), user=args.user, human_only=args.human_verdicts, disagreements=args.disagreements
        )
    except (HistoryUnavailable, sqlite3.Error) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if not records:
        which = (
            " where the human verdict and the answer key disagree"
            if args.disagreements
            else " with a human verdict"
            if args.human_verdicts
            else ""
        )
        who = f" of user {args.user}" if args.user else ""
        todo = " (and set your verdict, Right or Wrong, under answers)" if which else ""
        print(
            f"error: no stored answers{which}{who} in {history_source(settings)}: nothing was written. "
            f"Chat first{todo}, then export.",
            file=sys.stderr,
        )
        return 1
    text = render(records, args.format)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {len(records)} answer(s) to {args.out}", file=sys.stderr)
    return 0


def cmd_user(settings: Settings, args: argparse.Namespace) -> int:
    from backend.qa.accounts import AccountsError, read_users_file, remove_user, set_user

    path, action = settings.users_path, args.action or "list"
    try:
        if action == "list":
            print("\n".join(sorted(read_users_file(path))) or f"no users in {path}: the page logs in the local user")
            return 0
        if not args.name:
            print("error: give a user name: python -m backend user add NAME", file=sys.stderr)
            return 2
        if action == "remove":
            print("removed" if remove_user(path, args.name) else f"no user {args.name} in {path}")
            return 0
        password = sys.stdin.readline().rstrip("\n") if args.password_stdin else getpass.getpass("password: ")
        set_user(path, args.name, password)
    except AccountsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"user {args.name} saved in {path} (password stored as an Argon2 hash); restart the app to use it")
    return 0


def cmd_qa(settings: Settings, args: argparse.Namespace) -> int:
    from backend.qa.accounts import LOCAL_USER
    from backend.qa.accuracy_cli import RunOptions, run_accuracy

    if args.samples < 1 or args.parallel < 1:
        print("error: --samples and --parallel must be at least 1", file=sys.stderr)
        return 2
    return run_accuracy(
        _asking_settings(settings),
        RunOptions(
            samples=args.samples,
            questions_file=args.questions,
            user=args.user or LOCAL_USER,
            out_dir=args.results,
            parallel=args.parallel,
            temperature=args.temperature,
            top_p=args.top_p,
            max_tokens=args.max_tokens,
            seed=args.seed,
        ),
    )


def _asking_settings(settings: Settings) -> Settings:
    """The settings of a command that asks the server: RCHAT_API_KEY if set, else the running app's key."""
    key = commands_api_key(settings.api_key.get_secret_value(), settings.status_file)
    return settings.model_copy(update={"api_key": SecretStr(key)})


def _settings_or_none() -> Settings | None:
    """The settings, or None after saying in one line what is wrong with them."""
    try:
        return load_settings()
    except SettingsError as err:
        print(f"error: {err}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None, *, stop: StopRequest | None = None) -> int:
    """Run one command. `stop` holds the stop signals since the process began (backend/__main__.py): the
    launcher acts on it; any other command gives the signals back first (a Ctrl-C then ends it)."""
    try:
        return _command(argv, stop)
    except KeyboardInterrupt:
        die_of(signal.SIGINT)  # no stack trace: the shell shows the ^C, and its status says why we ended
        raise  # not reached


def _command(argv: list[str] | None, stop: StopRequest | None) -> int:
    from backend.cli_args import DELEGATED, build_parser

    parser = build_parser(__doc__)
    args, extra = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    command = args.command or "run"
    if stop is not None and command not in ("run", "serve"):
        stop.release()
    if command == "qa" and args.action in DELEGATED:
        from backend.qa.compare.cli import qa_compare_command

        return qa_compare_command(args.action, extra)
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    settings = _settings_or_none()
    if settings is None:
        return 2
    if command in ("run", "serve"):
        from backend.qa.setup import preflight
        from backend.server.launcher import run

        return run(settings, with_ui=command == "run", preflight=preflight, stop=stop or StopRequest.install())
    commands = {"export": cmd_export, "user": cmd_user, "qa": cmd_qa, "replay": cmd_replay}
    if command in commands:
        return commands[command](settings, args)
    simple = {"check": cmd_check, "prepare": cmd_prepare, "start": cmd_start, "stop": cmd_stop, "status": cmd_status}
    return simple[command](settings)


def cmd_replay(settings: Settings, args: argparse.Namespace) -> int:
    from backend.qa.replay_report import replay_command

    return replay_command(_asking_settings(settings), args.answer_id, as_json=args.json)
