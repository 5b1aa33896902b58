"""Run the chat page (app.py under Chainlit) as a child process group: for the benchmark and tests."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from backend.server import processes
from backend.server.launcher import page_argv
from backend.settings import PROJECT_ROOT


def chainlit_argv(host: str, port: int) -> list[str]:
    return page_argv(host, port)  # the launcher's command, so benchmarks and tests run what users run


@contextmanager
def chainlit_app(*, ui_port: int, log_dir: Path, env: dict[str, str], timeout: float = 90) -> Iterator[str]:
    """Start app.py with the given RCHAT_* variables; yield its URL once it answers; stop it after."""
    # Its own data folder unless told otherwise: a test or benchmark never writes the user's history.
    full_env = {**os.environ, "RCHAT_UI_PORT": str(ui_port), "RCHAT_LOG_DIR": str(log_dir),
                "RCHAT_DATA_DIR": str(log_dir / "data"), **env}
    log = log_dir / f"ui-{ui_port}.log"
    proc = processes.spawn_group(chainlit_argv("127.0.0.1", ui_port), env=full_env, log_path=log, cwd=PROJECT_ROOT)
    url = f"http://127.0.0.1:{ui_port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the chat page exited with code {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the chat page did not answer within {timeout:.0f} s; see {log}")
            time.sleep(0.5)
        yield url
    finally:
        processes.stop_group(proc, grace=5)
