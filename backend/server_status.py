"""The backend state the launcher publishes and the UI reads: a small JSON file, replaced atomically.

Beside it, the launcher's API key for this user's own commands (`replay`, `qa run`): a file only this
user can read (mode 0600 from its creation), removed when the launcher stops, and used only while the
launcher that wrote it is alive (`commands_api_key`).
"""

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
    engine: dict[str, Any] = field(default_factory=dict)  # what was launched: backend/engine/launch_facts.py
    warning: str = ""  # e.g. the start-up self-test fell back to float32: the page shows it while ready
    phase_since: float = 0.0  # epoch seconds the phase began (0: unknown, `since` stands for it)

    def describe(self) -> str:
        """A sentence for the chat page."""
        now = time.time()
        waited = max(0, int(now - self.since)) if self.since else 0
        if self.state == "starting":
            in_phase = max(0, int(now - self.phase_since)) if self.phase_since else waited
            started = f" (started {waited} s ago)" if waited - in_phase >= 5 else ""
            return (
                f"The model server is starting: {self.phase or 'launching'}, {in_phase} s so far{started}. "
                "Questions asked now are answered as soon as it is ready."
            )
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


def holding_back(status: BackendStatus | None) -> bool:
    """Whether a live launcher says its server is not ready yet, whatever /health answers: it is
    starting or restarting (the self-test after /health included, which may start it again)."""
    return bool(status and status.state in ("starting", "restarting") and _alive(status.pid))


def key_file(status_path: Path) -> Path:
    """Where the launcher that publishes `status_path` leaves its API key for this user's commands."""
    return status_path.with_suffix(".key")


def write_key(path: Path, key: str, pid: int) -> None:
    """Created with mode 0600 (never readable by others, not even for a moment), replaced atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the umask may only take bits away; this says exactly what it is
        os.write(fd, json.dumps({"pid": pid, "key": key}).encode())
    finally:
        os.close(fd)
    tmp.replace(path)


def remove_key(path: Path, pid: int) -> None:
    """Remove the key file if launcher `pid` wrote it (a later launcher's file is left alone)."""
    if _read_key(path)[0] == pid:
        path.unlink(missing_ok=True)


def _read_key(path: Path) -> tuple[int, str]:
    """(pid, key) from a key file that is this user's alone; (0, "") for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return 0, ""
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            return 0, ""  # another user's, or readable by others: not a key this app wrote
        data = json.loads(os.read(fd, 4096))
        return int(data["pid"]), str(data["key"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0, ""
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False  # 0 and negative numbers name process groups, not a launcher
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError, OverflowError):
        return False
    return True


def commands_api_key(env_key: str, status_path: Path) -> str:
    """The key this user's commands send: RCHAT_API_KEY if set (`env_key`), else the key of the live
    launcher publishing `status_path` (the one the page uses), else "" (none)."""
    if env_key:
        return env_key
    pid, key = _read_key(key_file(status_path))
    return key if _alive(pid) else ""  # a crashed launcher's file says nothing about now
