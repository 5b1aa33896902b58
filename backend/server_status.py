"""The backend state the launcher publishes and the UI reads: a small JSON file, replaced atomically."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

State = Literal["starting", "ready", "restarting", "failed", "stopped", "external"]


@dataclass
class BackendStatus:
    state: State
    phase: str = ""
    message: str = ""
    since: float = 0.0  # epoch seconds of the last change of state
    pid: int = 0  # the launcher's pid
    engine: dict[str, Any] = field(default_factory=dict)  # what was launched: backend/server/engine_facts.py
    warning: str = ""  # e.g. the start-up self-test fell back to float32: the page shows it while ready

    def describe(self) -> str:
        """A sentence for the chat page."""
        waited = max(0, int(time.time() - self.since)) if self.since else 0
        if self.state == "starting":
            return f"The model server is starting ({self.phase}, {waited} s so far). It will answer as soon as it is ready."
        if self.state == "restarting":
            return f"The model server stopped unexpectedly and is restarting ({self.phase}). Please wait a moment."
        if self.state == "failed":
            return f"The model server is down and will not be restarted automatically: {self.message}"
        if self.state == "stopped":
            return "The model server is stopped. Restart the app with ./start_service.sh."
        return self.message or "The model server is ready."


def write_status(path: Path, status: BackendStatus) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(asdict(status)))
    tmp.replace(path)  # readers see the old or the new file, never half of one


def read_status(path: Path) -> BackendStatus | None:
    try:
        data = json.loads(path.read_text())
        return BackendStatus(**data)
    except (OSError, ValueError, TypeError):
        return None
