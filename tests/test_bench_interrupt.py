"""Ctrl-C during a benchmark run stops everything that run started (its own vLLM included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from backend.settings import PROJECT_ROOT
from tests.conftest import EAGER, ctrl_c_as_in_a_terminal

pytestmark = pytest.mark.server


def test_ctrl_c_leaves_no_process_behind() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "backend.bench",
            "--skip-ui",
            "--skip-baseline",
            "--concurrency",
            "1",
            "--repeat",
            "50",
            "--max-tokens",
            "128",
        ],
        cwd=PROJECT_ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **EAGER, "PYTHONUNBUFFERED": "1"},  # eager: the test is about Ctrl-C, not compiling
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    lines: list[str] = []
    healthy = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)
            if "vLLM healthy after" in line:
                healthy.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert healthy.wait(300), "".join(lines)
        time.sleep(3)  # now inside the measured run
        spawned = psutil.Process(proc.pid).children(recursive=True)
        assert any("vllm" in " ".join(p.cmdline()) for p in spawned)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        assert "interrupted" in "".join(lines)
        time.sleep(1)
        alive = [p for p in spawned if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not alive, [p.cmdline()[:3] for p in alive]
    finally:
        if proc.poll() is None:
            proc.kill()
