"""The pid file of `python -m backend start`, which knows the process it names.

A bare pid is not enough: once our server has exited, the kernel may give its pid to any other
process, and `stop` would signal that one. So the file also records the process's start time (set at
fork, so it is right even before the child has exec'd, unlike its command line), and `stop` signals
only a process with that pid and that start time.
"""

from __future__ import annotations

import json
from pathlib import Path

import psutil


def write_pidfile(path: Path, pid: int) -> None:
    proc = psutil.Process(pid)
    path.write_text(json.dumps({"pid": pid, "create_time": proc.create_time()}))


def our_process(path: Path) -> tuple[psutil.Process | None, str]:
    """The process the pid file names if it is still the one we started; else None and why not."""
    try:
        recorded = json.loads(path.read_text())
        pid, create_time = int(recorded["pid"]), float(recorded["create_time"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, f"the pid file {path} cannot be read (written by an older version?); stop that server by hand"
    try:
        proc = psutil.Process(pid)
        same = abs(proc.create_time() - create_time) < 0.01
    except psutil.NoSuchProcess:
        return None, f"the server (pid {pid}) had already exited"
    except psutil.Error as err:
        return None, f"pid {pid} cannot be inspected ({err}); not signalling it"
    if not same:
        return None, f"the server (pid {pid}) had already exited; that pid now belongs to another process, left alone"
    return proc, ""
