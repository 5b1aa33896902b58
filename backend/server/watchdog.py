"""A tiny guard that kills our process groups if the launcher dies without cleaning up (even SIGKILL).

The launcher starts it with a pipe on stdin and writes `+PGID` / `-PGID` lines as it starts and stops
children. The kernel closes the pipe when the launcher dies, however it dies; on that EOF the
watchdog SIGTERMs every group still registered, waits a grace period, then SIGKILLs. It runs in its
own session so a Ctrl-C meant for the launcher does not reach it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

GRACE = 10.0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_groups(pgids: set[int]) -> None:
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and any(_group_alive(p) for p in pgids):
        time.sleep(0.2)
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups: set[int] = set()
    for line in sys.stdin:
        line = line.strip()
        if line.startswith("+"):
            groups.add(int(line[1:]))
        elif line.startswith("-"):
            groups.discard(int(line[1:]))
        elif line == "exit":
            return  # the launcher stopped everything itself
    _kill_groups(groups)


if __name__ == "__main__":
    main()
