"""What the chat page and HAProxy share as supervised children: one process group with its own log."""

from __future__ import annotations

import subprocess
from pathlib import Path

from backend.errors import ChatAppError, PortBusy
from backend.readiness import Outcome, Readiness
from backend.server import processes
from backend.server.supervisor import read_tail

STOP_GRACE = 10.0


class LoggedChild:
    """The plumbing of supervision.Child for a process listening on host:port and logging to log_path.

    Subclasses set `name`, `label` (how messages name it), `port_user` (who wanted the port) and `url`."""

    name: str
    label: str
    port_user: str
    host: str
    port: int
    log_path: Path
    startup_timeout: float
    proc: subprocess.Popen | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        raise NotImplementedError

    def check_port(self) -> None:
        if not processes.port_is_free(self.host, self.port):
            raise PortBusy(
                f"Cannot start {self.port_user}: port {self.port} is already in use by "
                f"{processes.port_holder(self.port)}. Stop it or set RCHAT_UI_PORT to a free port."
            )

    def _begin(self) -> bool:
        """Checks the port and counts the start; True on the first, whose log starts empty (a restart
        appends: the crash stays readable above it)."""
        self.check_port()
        first = self.starts == 0
        if first:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_text("")
        self.starts += 1
        return first

    def start_failure(self, outcome: Outcome) -> ChatAppError:
        if outcome.state is Readiness.TIMED_OUT:
            return ChatAppError(
                f"{self.label} did not answer on {self.url} within {self.startup_timeout:.0f} s; see {self.log_path}."
            )
        return ChatAppError(
            f"{self.label} {outcome.reason} while starting. Its log ({self.log_path}) ends with:\n"
            f"{self.log_tail(30)}{self._failure_extra()}"
        )

    def _failure_extra(self) -> str:
        return ""

    def on_wait(self, _outcome: Outcome) -> None:
        pass

    def stop(self, *, grace: float = STOP_GRACE) -> int | None:
        proc, self.proc = self.proc, None
        return None if proc is None else processes.stop_group(proc, grace=grace)

    def log_tail(self, lines: int = 30) -> str:
        return read_tail(self.log_path, lines)
