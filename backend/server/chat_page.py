"""The chat page (app.py under Chainlit) as a child process group: for the launcher, the benchmark and tests."""

from __future__ import annotations

import sys
from pathlib import Path

from backend.readiness import Awaited, process_gone
from backend.server import processes
from backend.server.child_process import LoggedChild
from backend.settings import PROJECT_ROOT


def chainlit_argv(host: str, port: int) -> list[str]:
    # `chainlit run --headless` without nest_asyncio (backend/page/serve.py says why).
    return [sys.executable, "-m", "backend.page.serve", "--host", host, "--port", str(port)]


class ChatPage(LoggedChild):
    """Owns one Chainlit process group; ready once GET / answers 200."""

    name = "the chat page"
    label, port_user = "The chat page", "the chat page"

    def __init__(
        self,
        *,
        host: str,
        port: int,
        env: dict[str, str],
        log_path: Path,
        startup_timeout: float,
        argv: list[str] | None = None,
    ) -> None:
        self.host, self.port, self.env, self.log_path = host, port, env, log_path
        self.startup_timeout = startup_timeout
        self.argv = argv or chainlit_argv(host, port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        self._begin()
        self.proc = processes.spawn_group(self.argv, env=self.env, log_path=self.log_path, cwd=PROJECT_ROOT)

    def awaited(self) -> Awaited:
        assert self.proc is not None, "start() first"
        return Awaited(self.url + "/", self.startup_timeout, gone=process_gone(self.proc))
