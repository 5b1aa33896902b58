"""The launcher's end of the watchdog (backend/server/watchdog.py): start it, tell it each child's group."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from backend.settings import PROJECT_ROOT


@dataclass
class WatchdogLink:
    proc: subprocess.Popen

    @classmethod
    def start(cls) -> WatchdogLink:
        return cls(
            subprocess.Popen(
                [sys.executable, "-m", "backend.server.watchdog"],
                stdin=subprocess.PIPE,
                cwd=PROJECT_ROOT,
                start_new_session=True,
                text=True,
            )
        )

    def tell(self, line: str) -> None:
        """`+PGID`, `-PGID` or `exit`; a watchdog already gone is no reason to fail."""
        if self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def wait(self, timeout: float) -> None:
        self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        self.proc.kill()
