"""Ctrl-C, SIGTERM and SIGHUP from the first moment of a command: held, then acted on, never a stack trace.

`python -m backend` installs this before it imports anything heavy (backend/__main__.py), so a Ctrl-C
during the imports or the launcher's set-up is remembered instead of raising KeyboardInterrupt in
the middle of an import. The launcher polls it (backend/server/launcher.py); any other command hands
the signals back to their defaults and, if one came meanwhile, exits as that signal would have.

SIGHUP ignored when the process started stays ignored: that is `nohup`, asking that closing the terminal
not stop the chat. SIGINT and SIGTERM are always taken, as the launcher always did: a script's `cmd &`
starts us with SIGINT ignored, and its `kill -INT` is still a stop. Stdlib only: it runs before the rest
is imported.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopRequest:
    """The first stop signal received, or None; the handlers for STOP_SIGNALS are ours while it is held."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.held: tuple[int, ...] = ()

    @classmethod
    def install(cls) -> StopRequest:
        request = cls()
        nohup = signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        request.held = tuple(sig for sig in STOP_SIGNALS if not (nohup and sig == signal.SIGHUP))
        for sig in request.held:
            signal.signal(sig, request._handle)
        return request

    def ask(self, signum: int) -> None:
        """A stop, as `signum` asks for it; the first one asked counts."""
        if self.signum is None:
            self.signum = signum

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.ask(signum)

    def release(self) -> None:
        """Give the signals back to their defaults; one that came while held ends the process now, as it
        would have (so a shell running us sees a command stopped by Ctrl-C, and stops too)."""
        for sig in self.held:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
        if self.signum is not None:
            die_of(self.signum)


def die_of(signum: int) -> None:
    """End this process as `signum` would: its default action, so the exit status says which signal."""
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    raise SystemExit(128 + signum)  # not reached: the default action of every STOP_SIGNAL ends the process
