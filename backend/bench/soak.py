"""Soak: many chat sessions through the page at once, for minutes; checks errors, cross-talk, UI memory.

    python -m backend.bench.soak                          # 32 sessions for 5 minutes, own vLLM + page
    python -m backend.bench.soak --sessions 8 --minutes 1 --max-tokens 32
    python -m backend.bench.soak --url http://127.0.0.1:7860 --data-dir data   # a page already running

Each session is one headless browser tab on the page's websocket. It asks questions tagged with its
number and turn ("[s07 t3] ...") one after another until the time is up, at least --turns of them.
Afterwards it checks:
- errors: every answer ended normally (no notice, no timeout, no dropped connection);
- cross-talk: every message a session received carries its own thread's id, and the history database
  holds, for each session's thread, exactly the questions it asked with the answers it was shown;
- memory: the page process's resident memory, sampled every few seconds, at start, after the first
  round (every session answered once), and at the end.
Prints a summary, writes results/soak-<time>.json, exits 0 when every check passed and 1 otherwise.
The short version of this run is tests/test_soak.py; the long one's last result is in docs/reliability.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import psutil

from backend.bench.chainlit_client import ChainlitSession
from backend.bench.report import start_run
from backend.errors import NOTICE_MARK
from backend.qa.export import load_records
from backend.server.processes import free_port, free_ports, listener_pid
from backend.settings import PROJECT_ROOT, load_settings

QUESTIONS = (
    "What is {a} plus {b}?",
    "Which number is bigger, {a}.11 or {a}.8?",
    "Name a word that rhymes with cat, then count to {b}.",
    "Is {a} an even number?",
)
SAMPLE_EVERY = 3.0  # seconds between memory samples


def say(text: str) -> None:
    print(f"[soak] {text}", file=sys.stderr, flush=True)


def question(session: int, turn: int) -> str:
    """A question no other session or turn asks, so that a misplaced answer can be traced."""
    text = QUESTIONS[(session + turn) % len(QUESTIONS)].format(a=session + 2, b=turn + 3)
    return f"[s{session:02d} t{turn}] {text}"


@dataclass
class Turn:
    question: str
    answer_id: str = ""
    shown: str = ""
    error: str = ""


@dataclass
class SessionLog:
    index: int
    thread_id: str = ""
    turns: list[Turn] = field(default_factory=list)
    foreign_threads: list[str] = field(default_factory=list)  # thread ids on messages it should not have got
    error: str = ""  # the session itself failed (could not connect, dropped)


class Memory:
    """The page process's resident memory over the run, in MiB."""

    def __init__(self, pid: int | None) -> None:
        self.proc = psutil.Process(pid) if pid else None
        self.samples: list[tuple[float, float]] = []
        self.marks: dict[str, float] = {}
        self.started = time.monotonic()

    def rss(self) -> float | None:
        try:
            return round(self.proc.memory_info().rss / 2**20, 1) if self.proc else None
        except psutil.Error:
            return None

    def mark(self, name: str) -> None:
        value = self.rss()
        if value is not None:
            self.marks[name] = value

    async def sample_forever(self) -> None:
        while True:
            value = self.rss()
            if value is not None:
                self.samples.append((round(time.monotonic() - self.started, 1), value))
            await asyncio.sleep(SAMPLE_EVERY)

    def summary(self) -> dict:
        marks = self.marks
        growth = None
        if "after_first_round" in marks and "end" in marks:
            growth = round(marks["end"] - marks["after_first_round"], 1)
        peak = max((v for _, v in self.samples), default=None)
        return {"rss_mib": marks, "peak_mib": peak, "growth_after_first_round_mib": growth, "samples": self.samples}


class FirstRound:
    """Fires once every session has had one answer: the point from which memory should stay flat."""

    def __init__(self, sessions: int, memory: Memory) -> None:
        self.left, self.memory = sessions, memory

    def one_done(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.memory.mark("after_first_round")


async def run_session(
    url: str, index: int, *, deadline: float, min_turns: int, timeout: float, first_round: FirstRound
) -> SessionLog:
    log = SessionLog(index)
    try:
        async with ChainlitSession(url) as session:
            while len(log.turns) < min_turns or time.monotonic() < deadline:
                turn = Turn(question(index, len(log.turns)))
                log.turns.append(turn)
                await ask(session, turn, timeout)
                if len(log.turns) == 1:
                    first_round.one_done()
                if turn.error:
                    break
            log.thread_id = session.thread_id
            log.foreign_threads = sorted({m.get("threadId") for m in session.messages} - {session.thread_id})
    except Exception as err:  # noqa: BLE001 - the run goes on and reports it
        log.error = f"{type(err).__name__}: {err}"
    return log


async def ask(session: ChainlitSession, turn: Turn, timeout: float) -> None:
    try:
        answer = await session.ask(turn.question, timeout=timeout)
    except TimeoutError:
        turn.error = f"the answer did not end within {timeout:.0f} s"
        return
    notices = [t for t in answer.texts.values() if t.startswith(NOTICE_MARK)]
    replies = {k: t for k, t in answer.texts.items() if not t.startswith(NOTICE_MARK)}
    if notices:
        turn.error = notices[0][:200]
    elif len(replies) != 1:
        turn.error = f"expected one answer, got {len(replies)}"
    else:
        ((turn.answer_id, turn.shown),) = replies.items()


def cross_talk(logs: list[SessionLog], db: Path | None) -> list[str]:
    """Every way an answer landed where it should not, as sentences (empty: none)."""
    problems = []
    threads = [log.thread_id for log in logs if log.thread_id]
    if len(set(threads)) != len(threads):
        problems.append("two sessions were given the same thread")
    for log in logs:
        if log.foreign_threads:
            problems.append(f"session {log.index} received messages of threads {log.foreign_threads}")
    if db is None:
        return problems
    for log in logs:
        if not log.thread_id:
            continue
        stored = load_records(db, thread_id=log.thread_id)
        asked = [t.question for t in log.turns]
        if [r["question"] for r in stored] != asked:
            problems.append(
                f"session {log.index}: the database holds questions "
                f"{[r['question'] for r in stored]} for its thread, it asked {asked}"
            )
            continue
        for record, turn in zip(stored, log.turns, strict=True):
            if turn.answer_id and (record["answer_id"], record["shown"]) != (turn.answer_id, turn.shown):
                problems.append(f"session {log.index}: the stored answer to {turn.question!r} is not the one shown")
    return problems


async def soak(
    url: str, *, sessions: int, minutes: float, min_turns: int, timeout: float = 300, db: Path | None = None
) -> dict:
    """Run the sessions against the page at url; the result dict says what was checked and found."""
    memory = Memory(listener_pid(urlparse(url).port or 80))
    memory.mark("start")
    sampler = asyncio.create_task(memory.sample_forever())
    started = time.monotonic()
    first_round = FirstRound(sessions, memory)
    try:
        logs = await asyncio.gather(
            *(
                run_session(
                    url,
                    i,
                    deadline=started + minutes * 60,
                    min_turns=min_turns,
                    timeout=timeout,
                    first_round=first_round,
                )
                for i in range(sessions)
            )
        )
    finally:
        sampler.cancel()
    wall = time.monotonic() - started
    memory.mark("end")
    await asyncio.sleep(0.5)  # the last saves are awaited before task_end; leave the file a moment anyway
    errors = [f"session {log.index}: {log.error}" for log in logs if log.error]
    errors += [f"session {log.index} {t.question!r}: {t.error}" for log in logs for t in log.turns if t.error]
    answers = sum(1 for log in logs for t in log.turns if t.answer_id)
    return {
        "sessions": sessions,
        "wall_s": round(wall, 1),
        "answers": answers,
        "answers_per_min": round(answers / wall * 60, 1),
        "turns_per_session": [len(log.turns) for log in logs],
        "errors": errors,
        "cross_talk": cross_talk(logs, db),
        "db_checked": db is not None,
        "memory": memory.summary(),
        "logs": [asdict(log) for log in logs],
    }


def passed(result: dict, max_growth_mib: float) -> bool:
    growth = result["memory"]["growth_after_first_round_mib"]
    return not result["errors"] and not result["cross_talk"] and (growth is None or growth <= max_growth_mib)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m backend.bench.soak", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sessions", type=int, default=32, help="concurrent chat sessions (default 32)")
    p.add_argument("--minutes", type=float, default=5.0, help="how long to keep asking (default 5)")
    p.add_argument("--turns", type=int, default=3, help="at least this many questions per session (default 3)")
    p.add_argument("--max-tokens", type=int, default=64, help="answer budget when it starts its own page")
    p.add_argument(
        "--max-growth-mib",
        type=float,
        default=50.0,
        help="most the page's memory may grow after the first round (default 50)",
    )
    p.add_argument("--url", default="", help="a running chat page to soak instead of starting one")
    p.add_argument("--data-dir", type=Path, default=None, help="that page's RCHAT_DATA_DIR, to check storage")
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "results", help="results folder")
    p.add_argument("--label", default="", help="a note stored with the result")
    args = p.parse_args(argv)
    if args.sessions < 1 or args.turns < 1 or args.minutes < 0 or args.max_tokens < 1:
        p.error("--sessions, --turns and --max-tokens must be at least 1, --minutes at least 0")
    return args


def own_page(args: argparse.Namespace, stack: ExitStack) -> tuple[str, Path]:
    """Start a managed vLLM and a chat page on free ports; their data folder is a fresh temporary one."""
    from backend.bench.ui_process import chainlit_app
    from backend.server.supervisor import VLLMServer

    work = Path(tempfile.mkdtemp(prefix="soak-"))
    vllm_port, ui_port = free_ports(2)
    settings = load_settings(vllm_port=vllm_port, ui_port=ui_port, log_dir=work)
    say("starting the managed vLLM server")
    server = stack.enter_context(VLLMServer(settings, log_path=work / "vllm.log"))
    env = {
        "RCHAT_BASE_URL": server.url,
        "RCHAT_API_KEY": server.api_key,
        "RCHAT_DEFAULT_MAX_TOKENS": str(args.max_tokens),
    }
    url = stack.enter_context(chainlit_app(ui_port=free_port(), log_dir=work, env=env))
    say(f"page up at {url}; logs and history in {work}")
    return url, work / "data"


def report(result: dict) -> str:
    mem = result["memory"]
    marks = ", ".join(f"{k} {v:.0f} MiB" for k, v in mem["rss_mib"].items())
    lines = [
        f"{result['sessions']} sessions, {result['answers']} answers in {result['wall_s']:.0f} s "
        f"({result['answers_per_min']:.0f}/min), turns per session {min(result['turns_per_session'])}-"
        f"{max(result['turns_per_session'])}",
        f"errors: {len(result['errors'])}",
        *(f"  {e}" for e in result["errors"][:10]),
        f"cross-talk: {len(result['cross_talk'])}"
        + ("" if result["db_checked"] else " (messages only: no --data-dir, database not checked)"),
        *(f"  {c}" for c in result["cross_talk"][:10]),
        f"page memory: {marks}; peak {mem['peak_mib']} MiB; "
        f"growth after the first round {mem['growth_after_first_round_mib']} MiB",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    meta = start_run(args.label)
    if meta is None:
        return 2
    try:
        with ExitStack() as stack:
            url, data_dir = (args.url.rstrip("/"), args.data_dir) if args.url else own_page(args, stack)
            db = data_dir / "history.sqlite3" if data_dir else None
            say(f"{args.sessions} sessions for {args.minutes:g} min (at least {args.turns} turns each)")
            result = asyncio.run(soak(url, sessions=args.sessions, minutes=args.minutes, min_turns=args.turns, db=db))
    except KeyboardInterrupt:
        say("interrupted: everything this run started has been stopped")
        return 130
    ok = passed(result, args.max_growth_mib)
    meta.update(
        minutes=args.minutes,
        min_turns=args.turns,
        max_tokens=None if args.url else args.max_tokens,
        max_growth_mib=args.max_growth_mib,
        passed=ok,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"soak-{meta['date']}.json"
    path.write_text(json.dumps({"meta": meta, **result}, indent=2, ensure_ascii=False))
    print(report(result))
    print("PASSED" if ok else "FAILED")
    say(f"wrote {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
