"""CI's check of the user's path: a fresh clone, the runtime lock alone, the page started and answering.

The test environment holds packages the runtime one does not (Playwright brings greenlet, for one), so
a green test suite does not prove that `./start_service.sh` works for a user. This clones the committed
tree into a fresh directory, runs its `scripts/setup.sh` (no --dev: locks/ui.txt only) in external
mode, starts its `./start_service.sh` against the fake OpenAI server of tests/ (a model server is not
what is checked here), asks a question through the page's websocket, and stops everything it started.

    .venv/bin/python scripts/check_runtime.py                # exit 0: the page served and answered
    .venv/bin/python scripts/check_runtime.py --drop greenlet  # the same, minus one package: must fail

Runs in the test environment (it needs the headless client); the page runs in the clone's own .venv.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.bench.chainlit_client import ChainlitSession  # noqa: E402
from backend.server.processes import free_port, spawn_group, stop_group  # noqa: E402

QUESTION = "Which number is bigger, 9.11 or 9.8?"
READY = "chat ready at"


def say(text: str) -> None:
    print(f"[check-runtime] {text}", flush=True)


def clean_env(**extra: str) -> dict[str, str]:
    """The shell's environment without our settings, so the check sees only what it sets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RCHAT_", "VIRTUAL_ENV"))}
    return {**env, **extra}


def build_runtime(app: Path, env: dict[str, str], drop: str) -> None:
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(app)], check=True)
    started = time.monotonic()
    subprocess.run([str(app / "scripts" / "setup.sh")], env=env, check=True)
    say(f"runtime environment built from locks/ui.txt in {time.monotonic() - started:.0f} s")
    if drop:
        subprocess.run(
            [
                str(app / ".tools" / "bin" / "uv"),
                "pip",
                "uninstall",
                "--quiet",
                "--python",
                str(app / ".venv" / "bin" / "python"),
                drop,
            ],
            check=True,
        )
        say(f"removed {drop} from the runtime environment (this run must fail)")


def start_page(app: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen, threading.Event]:
    proc = subprocess.Popen(
        [str(app / "start_service.sh")],
        env=env,
        cwd=app,
        text=True,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    ready = threading.Event()

    def pump() -> None:
        with open(log, "w") as out:
            for line in proc.stdout:
                out.write(line)
                out.flush()
                if READY in line:
                    ready.set()

    threading.Thread(target=pump, daemon=True).start()
    return proc, ready


def wait_ready(proc: subprocess.Popen, ready: threading.Event, timeout: float) -> str:
    """'' when the page said it is ready; else why not."""
    deadline = time.monotonic() + timeout
    while not ready.wait(0.5):
        if proc.poll() is not None:
            return f"start_service.sh exited with code {proc.returncode} before the page was ready"
        if time.monotonic() > deadline:
            return f"the page was not ready after {timeout:.0f} s"
    return ""


async def ask(url: str) -> str:
    async with ChainlitSession(url) as session:
        answer = await session.ask(QUESTION, timeout=60)
    return " ".join(answer.texts.values())


def run_check(drop: str) -> str:
    """'' when the page served and answered; else what went wrong."""
    with tempfile.TemporaryDirectory(prefix="rchat-runtime-") as tmp:
        work = Path(tmp)
        fake_port, ui_port = free_port(), free_port()
        env = clean_env(
            RCHAT_BASE_URL=f"http://127.0.0.1:{fake_port}/v1",
            RCHAT_UI_PORT=str(ui_port),
            RCHAT_DATA_DIR=str(work / "data"),
            RCHAT_LOG_DIR=str(work / "logs"),
        )
        fake = spawn_group(
            [sys.executable, "-m", "tests.fake_openai_server", str(fake_port)],
            env=None,
            log_path=work / "fake.log",
            cwd=ROOT,
        )
        page = None
        try:
            build_runtime(work / "app", env, drop)
            page, ready = start_page(work / "app", env, work / "page.log")
            problem = wait_ready(page, ready, timeout=120)
            if not problem:
                reply = asyncio.run(ask(f"http://127.0.0.1:{ui_port}"))
                problem = "" if "9.8" in reply else f"the page's answer was not the server's: {reply[:200]!r}"
            if problem:
                say("page log, last lines:\n" + "\n".join((work / "page.log").read_text().splitlines()[-25:]))
            return problem
        finally:
            if page is not None and page.poll() is None:
                page.send_signal(signal.SIGINT)  # Ctrl-C, as a user stops it
                try:
                    page.wait(30)
                except subprocess.TimeoutExpired:
                    stop_group(page)
            stop_group(fake)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drop", default="", help="uninstall this package from the runtime environment first")
    problem = run_check(parser.parse_args().drop)
    say(f"FAILED: {problem}" if problem else "OK: a fresh clone's runtime environment served the page and answered")
    return 1 if problem else 0


if __name__ == "__main__":
    sys.exit(main())
