"""The page first (issue 39): it serves while vLLM is still starting, says which phase the start is in,
keeps saying so without a reload, and answers a question asked meanwhile once vLLM is ready.

The launcher runs for real (`python -m backend run`, what start_service.sh execs) with the real chat
page, and vLLM is tests/fake_slow_vllm.py, held in its compile phase until the test lets it go: a
real vLLM cannot be held there on cue. The same launcher with the real vLLM is in
tests/test_start_service.py. Nothing here asserts how fast anything is.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil

from backend.bench.chainlit_client import ChainlitSession
from backend.errors import NOTICE_MARK
from backend.server import compile_cache, processes
from backend.server_status import read_status
from backend.settings import PROJECT_ROOT
from tests.conftest import free_ports

QUESTION = "Which number is bigger, 9.11 or 9.8?"  # the fake streams "The bigger number is **9.8**."


class SlowStart:
    """`python -m backend run` on default settings whose vLLM is the held fake; remembers its output."""

    def __init__(self, tmp_path: Path) -> None:
        self.vllm_port, self.ui_port = free_ports(2)
        self.go, self.status_file = tmp_path / "go", tmp_path / f"backend-status-{self.ui_port}.json"
        wrapper = tmp_path / "fake-python"  # vLLM's argv in, the fake out; anything else to the real Python
        wrapper.write_text(
            f'#!/bin/sh\ncd {PROJECT_ROOT}\nif [ "$1" = "-m" ]; then shift 2; '
            f'exec {sys.executable} -m tests.fake_slow_vllm "$@"; fi\nexec {sys.executable} "$@"\n'
        )
        wrapper.chmod(0o755)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("RCHAT_")}
        env = {
            **clean,
            "RCHAT_VLLM_PYTHON": str(wrapper),
            "RCHAT_DEVICE": "cpu",
            "RCHAT_ENFORCE_EAGER": "false",
            "RCHAT_VLLM_PORT": str(self.vllm_port),
            "RCHAT_UI_PORT": str(self.ui_port),
            "RCHAT_LOG_DIR": str(tmp_path),
            "RCHAT_DATA_DIR": str(tmp_path / "data"),
            "RCHAT_UI_STARTUP_TIMEOUT": "300",
            "FAKE_VLLM_GO": str(self.go),
            "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
        }  # its marks, not the user's
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "backend", "run"],
            cwd=PROJECT_ROOT,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for_output(self, text: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert time.monotonic() < deadline and self.proc.poll() is None, self.output
            time.sleep(0.2)

    def ctrl_c(self) -> None:
        """Ctrl-C: the launcher ends with 130, and no process it started nor either port is left."""
        spawned = psutil.Process(self.proc.pid).children(recursive=True)
        assert spawned, "nothing was started"
        os.kill(self.proc.pid, signal.SIGINT)
        assert self.proc.wait(timeout=60) == 128 + signal.SIGINT, self.output
        deadline = time.monotonic() + 30
        while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in spawned):
            assert time.monotonic() < deadline, [p.cmdline()[:3] for p in spawned if p.is_running()]
            time.sleep(0.3)
        assert processes.port_is_free("127.0.0.1", self.vllm_port)
        assert processes.port_is_free("127.0.0.1", self.ui_port)
        assert "all stopped" in self.output and "Traceback" not in self.output

    def __enter__(self) -> SlowStart:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)


def texts(session: ChainlitSession) -> list[str]:
    return [m.get("output", "") for m in session.messages]


async def until(check, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def ask_during_start(service: SlowStart) -> tuple[list[str], list[str]]:
    """Open a chat while vLLM compiles, ask, let vLLM come up: (everything the page said, the answers)."""
    async with ChainlitSession(service.url) as session:
        starting = "The model server is starting: " + compile_cache.FIRST_COMPILE
        await until(lambda: any(starting in t for t in texts(session)))  # said on arrival
        opening = next(m["id"] for m in session.messages if starting in m.get("output", ""))
        first = next(t for t in texts(session) if starting in t)
        # Kept up to date without a reload: the same message, its seconds counting.
        await until(
            lambda: any(
                m["id"] == opening and starting in m.get("output", "") and m["output"] != first
                for m in session.messages
            )
        )
        asked = asyncio.create_task(session.ask(QUESTION, timeout=120))
        await until(
            lambda: sum(starting in t for t in {m["id"]: m.get("output", "") for m in session.messages}.values()) >= 2
        )
        await asyncio.sleep(1.5)
        assert not asked.done() and not [t for t in asked_answers(session) if t.strip()]
        service.go.touch()  # vLLM's start goes on: compile done, API server up
        answer = await asked
        await until(lambda: any("The model server is ready: ask away." in t for t in texts(session)), timeout=30)
        return texts(session), [t for t in answer.texts.values() if not t.startswith(NOTICE_MARK)]


def asked_answers(session: ChainlitSession) -> list[str]:
    return [t for t in (session.current.texts.values() if session.current else []) if not t.startswith(NOTICE_MARK)]


def test_the_page_serves_while_vllm_starts_and_answers_what_was_asked_once_it_is_ready(tmp_path) -> None:
    with SlowStart(tmp_path) as service:
        service.wait_for_output("chat page up at")
        assert httpx.get(service.url + "/", timeout=10).status_code == 200
        assert "vLLM healthy" not in service.output  # the page came first
        status = read_status(service.status_file)
        assert status.state == "starting" and status.phase == compile_cache.FIRST_COMPILE
        said, answers = asyncio.run(ask_during_start(service))
        assert len(answers) == 1 and "The bigger number is" in answers[0], said
        assert any("The model server is ready; answering now." in t for t in said), said
        assert not any("ready again" in t or "not answering" in t or "Traceback" in t for t in said), said
        service.wait_for_output("chat ready at")
        assert "self-test passed" in service.output
        assert read_status(service.status_file).state == "ready"
        service.ctrl_c()


def test_a_second_start_says_it_loads_the_compiled_model_and_ctrl_c_mid_start_stops_everything(tmp_path) -> None:
    """A restart reuses what the first start compiled (compile_cache.py marks it) and says so; Ctrl-C
    while vLLM is still starting, the page already up, leaves nothing behind."""
    with SlowStart(tmp_path) as first:
        first.go.touch()
        first.wait_for_output("chat ready at")
        first.ctrl_c()
    (tmp_path / "go").unlink()
    with SlowStart(tmp_path) as again:
        again.wait_for_output("chat page up at")
        again.wait_for_output(f"vLLM: {compile_cache.CACHED}")
        assert compile_cache.FIRST_COMPILE not in again.output
        assert read_status(again.status_file).phase == compile_cache.CACHED
        again.ctrl_c()
