"""Load for reliability: many chat sessions through the page, several turns each, for minutes.

Each session asks its own numbered questions over the page's websocket (as a browser tab would) and
keeps asking until the time is up. Afterwards every answer is checked against the history database:
it must sit in the asking session's own thread, under the question that session asked (no
cross-talk), with no error. The UI process's memory (RSS) is read at the start, after the first
round and at the end.

    python -m backend.bench.soak --sessions 32 --minutes 5     # prints a table, writes results/soak-*.json
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
from datetime import datetime, timezone
from pathlib import Path

import psutil

from backend.chainlit_client import ChainlitSession
from backend.export import load_records
from backend.processes import free_port
from backend.settings import PROJECT_ROOT, load_settings
from backend.supervisor import VLLMServer
from backend.ui_process import chainlit_app

QUESTIONS = ["What is {a} plus {b}?", "Is {a} bigger than {b}?", "Name a word that starts with the letter {c}.",
             "What is {a} times {b}?"]


@dataclass
class SoakResult:
    sessions: int
    seconds: float
    turns: int = 0
    errors: list[str] = field(default_factory=list)
    crosstalk: list[str] = field(default_factory=list)
    rss_mb: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.crosstalk


def question(session: int, turn: int) -> str:
    """Unique per session and turn, so that the stored question names its asker."""
    text = QUESTIONS[turn % len(QUESTIONS)].format(a=session * 7 + turn, b=turn + 3, c="ABCDEFGH"[turn % 8])
    return f"[s{session} t{turn}] {text}"


def ui_pid(port: int) -> int:
    for conn in psutil.net_connections("tcp"):
        if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
            return conn.pid
    raise RuntimeError(f"nothing listens on port {port}")


def rss_mb(pid: int) -> float:
    return round(psutil.Process(pid).memory_info().rss / 2**20, 1)


async def _session(url: str, index: int, deadline: float, min_turns: int, asked: dict, first_round: asyncio.Event,
                   done_first: list) -> None:
    async with ChainlitSession(url) as session:
        turn = 0
        while turn < min_turns or time.monotonic() < deadline:
            text = question(index, turn)
            answer = await session.ask(text, timeout=900)
            shown = "\n".join(answer.texts.values())
            asked.setdefault(session.thread_id, []).append((text, shown))
            turn += 1
            if turn == 1:
                done_first.append(index)
                if len(done_first) == asked["_sessions"]:
                    first_round.set()


async def _run(url: str, sessions: int, seconds: float, min_turns: int, pid: int, result: SoakResult) -> dict:
    asked: dict = {"_sessions": sessions}
    first_round, done_first = asyncio.Event(), []
    result.rss_mb["start"] = rss_mb(pid)

    async def sample_after_first_round() -> None:
        await first_round.wait()
        result.rss_mb["after_first_round"] = rss_mb(pid)

    sampler = asyncio.create_task(sample_after_first_round())
    deadline = time.monotonic() + seconds
    outcomes = await asyncio.gather(*(_session(url, i, deadline, min_turns, asked, first_round, done_first)
                                      for i in range(sessions)), return_exceptions=True)
    sampler.cancel()
    result.rss_mb["end"] = rss_mb(pid)
    result.errors += [f"session failed: {o!r}"[:300] for o in outcomes if isinstance(o, BaseException)]
    asked.pop("_sessions")
    return asked


def check(asked: dict, db: Path, result: SoakResult) -> None:
    """Every stored answer is in its asker's thread, under its own question, and none is an error."""
    for thread_id, turns in asked.items():
        stored = load_records(db, thread_id=thread_id)
        result.turns += len(turns)
        if [r["question"] for r in stored] != [q for q, _ in turns]:
            result.crosstalk.append(f"thread {thread_id[:8]}: stored questions {[r['question'] for r in stored]} "
                                    f"!= asked {[q for q, _ in turns]}"[:400])
            continue
        for record, (text, shown) in zip(stored, turns):
            if record["outcome"] != "complete":
                result.errors.append(f"{text}: outcome {record['outcome']}: {shown[-200:]}")
            elif record["answer"] and record["answer"] not in shown:
                result.crosstalk.append(f"{text}: the page showed another answer than the one stored")


def soak(url: str, *, port: int, data_dir: Path, sessions: int, seconds: float, min_turns: int) -> SoakResult:
    result = SoakResult(sessions=sessions, seconds=seconds)
    asked = asyncio.run(_run(url, sessions, seconds, min_turns, ui_pid(port), result))
    check(asked, data_dir / "history.sqlite3", result)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m backend.bench.soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=32)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--turns", type=int, default=3, help="at least this many turns per session")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "results")
    args = p.parse_args(argv)
    with ExitStack() as stack:
        tmp = Path(tempfile.mkdtemp(prefix="soak-"))
        settings = load_settings(vllm_port=free_port(), log_dir=tmp)
        server = stack.enter_context(VLLMServer(settings))
        port = free_port()
        env = {"RCHAT_VLLM_PORT": str(settings.vllm_port), "RCHAT_API_KEY": server.api_key,
               "RCHAT_DEFAULT_MAX_TOKENS": str(args.max_tokens), "RCHAT_DATA_DIR": str(tmp / "data")}
        url = stack.enter_context(chainlit_app(ui_port=port, log_dir=tmp, env=env))
        started = time.monotonic()
        result = soak(url, port=port, data_dir=tmp / "data", sessions=args.sessions, seconds=args.minutes * 60,
                      min_turns=args.turns)
        wall = time.monotonic() - started
    print(f"{'sessions':>9} {'turns':>6} {'wall s':>7} {'errors':>7} {'crosstalk':>10} "
          f"{'RSS start':>10} {'after 1st':>10} {'end':>7}")
    r = result.rss_mb
    print(f"{result.sessions:>9} {result.turns:>6} {wall:>7.0f} {len(result.errors):>7} {len(result.crosstalk):>10} "
          f"{r.get('start', 0):>10} {r.get('after_first_round', 0):>10} {r.get('end', 0):>7}")
    for line in result.errors[:5] + result.crosstalk[:5]:
        print("  " + line)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"soak-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps({**asdict(result), "wall_seconds": round(wall, 1), "ok": result.ok,
                               "max_tokens": args.max_tokens, "date": datetime.now(timezone.utc).isoformat()}, indent=2))
    print(f"wrote {out}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
