"""What the launcher prints: `[start] ...` lines, and vLLM's start-up phases as they change."""

from __future__ import annotations

import sys
from collections.abc import Callable

from backend.server.supervisor import Progress


def say(text: str) -> None:
    print(f"[start] {text}", file=sys.stderr, flush=True)


class ProgressPrinter:
    """Prints a line when the phase changes, and every 10 s, so a slow start never looks hung."""

    def __init__(self, publish: Callable[[str], None]) -> None:
        self.last_phase, self.last_time, self.publish = "", 0.0, publish

    def __call__(self, progress: Progress) -> None:
        if progress.phase != self.last_phase or progress.elapsed - self.last_time >= 10:
            say(f"{progress.elapsed:5.0f} s  vLLM: {progress.phase}")
            self.last_phase, self.last_time = progress.phase, progress.elapsed
            self.publish(progress.phase)
