"""Run the chat page (app.py under Chainlit) as a child process group: for the benchmark and tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from backend.readiness import Readiness, wait_ready
from backend.server.chat_page import ChatPage, chainlit_argv  # noqa: F401 - chainlit_argv re-exported


@contextmanager
def chainlit_app(*, ui_port: int, log_dir: Path, env: dict[str, str], timeout: float = 90) -> Iterator[str]:
    """Start app.py with the given RCHAT_* variables; yield its URL once it answers; stop it after."""
    # Its own data folder unless told otherwise: a test or benchmark never writes the user's history.
    full_env = {
        **os.environ,
        "RCHAT_UI_PORT": str(ui_port),
        "RCHAT_LOG_DIR": str(log_dir),
        "RCHAT_DATA_DIR": str(log_dir / "data"),
        **env,
    }
    page = ChatPage(
        host="127.0.0.1", port=ui_port, env=full_env, log_path=log_dir / f"ui-{ui_port}.log", startup_timeout=timeout
    )
    page.start()
    try:
        outcome = wait_ready(page.awaited())
        if outcome.state is not Readiness.READY:
            raise RuntimeError(str(page.start_failure(outcome)))
        yield page.url
    finally:
        page.stop(grace=5)
