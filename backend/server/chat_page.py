"""The chat page (app.py under Chainlit) as a child process group: for the launcher, the benchmark and tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from backend.errors import ChatAppError, PortBusy
from backend.readiness import Awaited, Outcome, Verdict, process_gone
from backend.server import processes
from backend.server.supervisor import read_tail
from backend.settings import PROJECT_ROOT

STOP_GRACE = 10.0


def chainlit_argv(host: str, port: int) -> list[str]:
    # `chainlit run --headless` without nest_asyncio (backend/page/serve.py says why).
    return [sys.executable, "-m", "backend.page.serve", "--host", host, "--port", str(port)]


class ChatPage:
    """Owns one Chainlit process group; ready once GET / answers 200."""

    name = "the chat page"

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
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def check_port(self) -> None:
        if not processes.port_is_free(self.host, self.port):
            raise PortBusy(
                f"Cannot start the chat page: port {self.port} is already in use by "
                f"{processes.port_holder(self.port)}. Stop it or set RCHAT_UI_PORT to a free port."
            )

    def start(self) -> None:
        self.check_port()
        if self.starts == 0:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_text("")  # a restart appends: the crash stays readable above it
        self.starts += 1
        self.proc = processes.spawn_group(self.argv, env=self.env, log_path=self.log_path, cwd=PROJECT_ROOT)

    def awaited(self) -> Awaited:
        assert self.proc is not None, "start() first"
        return Awaited(self.url + "/", self.startup_timeout, gone=process_gone(self.proc))

    def start_failure(self, outcome: Outcome) -> ChatAppError:
        if outcome.verdict is Verdict.TIMED_OUT:
            return ChatAppError(
                f"The chat page did not answer on {self.url} within {self.startup_timeout:.0f} s; see {self.log_path}."
            )
        return ChatAppError(
            f"The chat page {outcome.reason} while starting. Its log ({self.log_path}) ends with:\n{self.log_tail(30)}"
        )

    def on_wait(self, _outcome: Outcome) -> None:
        pass

    def stop(self, *, grace: float = STOP_GRACE) -> int | None:
        proc, self.proc = self.proc, None
        return None if proc is None else processes.stop_group(proc, grace=grace)

    def log_tail(self, lines: int = 30) -> str:
        return read_tail(self.log_path, lines)
