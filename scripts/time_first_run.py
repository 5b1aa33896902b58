"""Times a new user's first run: a fresh clone's `./start_service.sh` until its first answer, then a restart.

For each cache state a fresh clone runs `./start_service.sh`; as soon as the page serves, a question is
asked through it (a headless browser tab, backend/bench/chainlit_client.py) and answered once the model
server is ready. Then Ctrl-C and `./start_service.sh` again in the same clone: the restart. Times are
seconds from the command: set-up done, page serving, vLLM healthy (self-test included), the first
answer; and the launcher's phases with the second each began.

Cache states (with "empty", all of them live in one new temporary folder, so the runs go from cold to
warm; without it, this machine's own uv cache and ~/.cache serve):
  empty      uv's downloads and the user's cache ($XDG_CACHE_HOME: the converted model, the compiled
             kernels, vLLM's model info) all new folders: a new machine
  downloads  the same folders, now holding downloads and the converted model, but an empty compile
             cache (TORCHINDUCTOR_CACHE_DIR): a second clone on a CPU type not seen before
  warm       everything kept: a second clone on the same machine
Everything else is built inside each clone. Prints a table and writes results/first-run-<time>.json.

    .venv/bin/python scripts/time_first_run.py [--caches empty,downloads,warm] [--no-restart]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.bench.chainlit_client import ChainlitSession  # noqa: E402 - importable once ROOT is on the path
from backend.errors import NOTICE_MARK  # noqa: E402
from backend.server.processes import free_port, stop_group  # noqa: E402

QUESTION = "What is the capital of France?"
MARKS = {
    "setup": re.compile(r"\[setup\] set-up done"),
    "page": re.compile(r"chat page up at|chat ready at"),
    "vllm_healthy": re.compile(r"vLLM healthy after"),
    "ready": re.compile(r"chat ready at"),
}
PHASE = re.compile(r"\[start\]\s+\d+ s  vLLM: (.*)")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


class Start:
    """One `./start_service.sh` in `app`, its output read in a thread: marks and phases in seconds."""

    def __init__(self, app: Path, env: dict[str, str]) -> None:
        self.started = time.monotonic()
        self.marks: dict[str, float] = {}
        self.phases: list[tuple[float, str]] = []
        self.proc = subprocess.Popen(
            [str(app / "start_service.sh")],
            cwd=app,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            now = round(time.monotonic() - self.started, 1)
            print(f"    {now:6.1f} {line.rstrip()}", flush=True)
            for name, pattern in MARKS.items():
                if name not in self.marks and pattern.search(line):
                    self.marks[name] = now
            if (m := PHASE.search(line)) and (not self.phases or self.phases[-1][1] != m.group(1)):
                self.phases.append((now, m.group(1)))

    def wait_for(self, mark: str, timeout: float = 1500) -> float:
        deadline = time.monotonic() + timeout
        while mark not in self.marks:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"no '{mark}' (exit {self.proc.poll()})")
            time.sleep(0.2)
        return self.marks[mark]

    def first_answer(self, url: str) -> dict[str, float]:
        """Ask through the page as soon as it serves: seconds from the command to the answer's first
        token on the page, and to its end (which depends on how long the answer is)."""
        self.wait_for("page")
        answer = asyncio.run(_ask(url))
        whole = round(time.monotonic() - self.started, 1)
        if (
            not [t for t in answer.texts.values() if t.strip() and not t.startswith(NOTICE_MARK)]
            or not answer.token_times
        ):
            raise RuntimeError(f"no answer: {answer.texts}")
        first = whole - (time.perf_counter() - answer.token_times[0])
        return {"first_token": round(first, 1), "whole_answer": whole}

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGINT)  # Ctrl-C, as a user stops it
            self.proc.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            stop_group(self.proc)

    def result(self, answer: dict[str, float]) -> dict:
        return {**self.marks, **answer, "phases": self.phases, "load_after": os.getloadavg()[0]}


async def _ask(url: str):
    async with ChainlitSession(url) as session:
        return await session.ask(QUESTION, timeout=1500)


def timed_start(app: Path, env: dict[str, str]) -> dict:
    load = os.getloadavg()[0]
    start = Start(app, env)
    try:
        answer = start.first_answer(f"http://127.0.0.1:{env['RCHAT_UI_PORT']}")
        start.wait_for("ready", timeout=60)
        return {"load_before": load, **start.result(answer)}
    except RuntimeError as err:
        return {"load_before": load, "error": str(err), **start.marks}
    finally:
        start.stop()


def first_run(cache: Path | None, state: str, *, restart: bool, commit: str = "") -> dict:
    """A fresh clone's first start in cache state `state`, then (with `restart`) its second start."""
    with tempfile.TemporaryDirectory(prefix="rchat-first-run-") as tmp:
        app = Path(tmp) / "app"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(app)], check=True)
        if commit:  # an earlier version, to compare with
            subprocess.run(["git", "-C", str(app), "checkout", "--quiet", commit], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RCHAT_", "VIRTUAL_ENV", "TORCHINDUCTOR_"))}
        env.update(RCHAT_VLLM_PORT=str(free_port()), RCHAT_UI_PORT=str(free_port()))
        if cache is not None:
            env.update(UV_CACHE_DIR=str(cache / "uv"), XDG_CACHE_HOME=str(cache / "xdg"))
        if state == "empty":
            env["PIP_NO_CACHE_DIR"] = "1"  # the uv bootstrap's pip, too
        if state == "downloads":  # everything downloaded and converted, nothing compiled
            env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="rchat-inductor-")
        run = {"cache": state, "first": timed_start(app, env)}
        if restart:
            run["restart"] = timed_start(app, env)
        return run


def table(runs: list[dict]) -> str:
    rows = [
        "| caches | start | set-up | page serving | vLLM healthy | first answer: first token / end | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        for kind in ("first", "restart"):
            r = run.get(kind)
            if r:
                answer = f"{r['first_token']} / {r['whole_answer']}" if "first_token" in r else r.get("error", "-")
                rows.append(
                    f"| {run['cache']} | {kind} | {r.get('setup', '-')} | {r.get('page', '-')} | "
                    f"{r.get('vllm_healthy', '-')} | {answer} | {r['load_before']:.1f} |"
                )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--caches", default="empty,downloads,warm")
    parser.add_argument("--no-restart", action="store_true")
    parser.add_argument("--commit", default="", help="time this commit instead of HEAD")
    args = parser.parse_args()
    # Stopped early (Ctrl-C, or SIGTERM from a job runner; a background shell ignores SIGINT): the clone's
    # start_service.sh runs in a session of its own, so only our `finally` can stop it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    states = args.caches.split(",")
    # From empty, all runs share new cache folders; without "empty", this machine's own caches serve.
    cache = Path(tempfile.mkdtemp(prefix="rchat-caches-")) if "empty" in states else None
    runs = [first_run(cache, state, restart=not args.no_restart, commit=args.commit) for state in states]
    commit = (
        args.commit
        or subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    )
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "commit": commit,
        "runs": runs,
    }
    print("\n" + table(runs))
    out = ROOT / "results" / f"first-run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"written: {out}")
    return 0 if all("error" not in r.get(k, {}) for r in runs for k in ("first", "restart")) else 1


if __name__ == "__main__":
    sys.exit(main())
