"""What the launcher prints, worded in one place: the `[start] ...` lines of a start (what is started
and how, vLLM's phases as they change, healthy, page up, chat ready), of a child's crash, restart or
giving up, and of the stop. The launcher and the supervision loop decide; these functions only word it.
tests/test_console.py prints a scripted run with them and compares it with tests/data/console-golden.txt.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

from backend.engine.vllm_command import LaunchSpec
from backend.server.restart_policy import Decision, RestartPolicy
from backend.server.supervisor import Progress

STOPPING_VLLM = "stopping vLLM"
ALL_STOPPED = "all stopped"
PAGE_STAYS_UP = "the chat page stays up and tells its users; Ctrl-C stops it"


def say(text: str) -> None:
    print(f"[start] {text}", file=sys.stderr, flush=True)


# --- the start ---
def starting(server_url: str, model: str, log_path: Path | str, launch: LaunchSpec) -> list[str]:
    """What is started, and how vLLM computes (dtype, threads, compiled or eager) and why."""
    lines = [
        f"starting vLLM on {server_url} ({launch.device}), model {model}",
        f"vLLM log: {log_path}",
        f"dtype {launch.dtype or 'auto'}: {launch.why}",
    ]
    if launch.threads:
        lines.append(f"CPU threads: {launch.threads}")
    if launch.compile:
        lines.append(f"CPU compile: {launch.compile}")
    return lines


def external(base_url: str) -> str:
    return f"external mode: waiting on {base_url}/health (nothing is launched)"


def phase(progress: Progress) -> str:
    return f"{progress.elapsed:5.0f} s  vLLM: {progress.phase}"


class ProgressPrinter:
    """Prints a line when the phase changes, and every 10 s, so a slow start never looks hung."""

    def __init__(self, publish: Callable[[str], None]) -> None:
        self.last_phase, self.last_time, self.publish = "", 0.0, publish

    def __call__(self, progress: Progress) -> None:
        if progress.phase != self.last_phase or progress.elapsed - self.last_time >= 10:
            say(phase(progress))
            self.last_phase, self.last_time = progress.phase, progress.elapsed
            self.publish(progress.phase)


def healthy(seconds: float) -> str:
    return f"vLLM healthy after {seconds:.1f} s"


def page_up(url: str, took: float) -> str:
    return (
        f"chat page up at {url} after {took:.1f} s: it shows how vLLM's start goes, and questions asked "
        "there are answered once vLLM is ready (Ctrl-C stops everything)"
    )


def chat_ready(url: str, took: float) -> str:
    return f"chat ready at {url} after {took:.1f} s (Ctrl-C stops everything)"


def not_hashed(err: BaseException) -> str:
    return f"the model files could not be hashed for the answers' stamps: {err!r}"


# --- a supervised child (vLLM, a page, HAProxy): its check, crash, restart, giving up ---
def check_failed(name: str, err: BaseException) -> str:
    return f"the check after {name} started failed ({err!r}); keeping it as it is"


def starting_again(name: str, because: str) -> str:
    return f"starting {name} again: {because}"


def healthy_again(name: str) -> str:
    return f"{name} is healthy again"


def restarting(name: str, reason: str, decision: Decision, policy: RestartPolicy) -> str:
    return (
        f"{name} {reason}; restarting in {decision.delay:.0f} s (crash {decision.crashes}; {policy.describe_limit()})"
    )


def gave_up(name: str, reason: str, decision: Decision, policy: RestartPolicy, log_path: Path | str) -> str:
    """Why a child is no longer restarted: also what the status file and the page say."""
    times = "once" if decision.crashes == 1 else f"{decision.crashes} times"
    return (
        f"{name} crashed {times} in {policy.window:.0f} s (last: {reason}); giving up. "
        f"Check {log_path}, then restart with ./start_service.sh."
    )


def gave_up_error(reason: str, log_tail: str) -> str:
    return f"error: {reason}\nThe end of its log:\n{log_tail}"


def cannot_keep_up(name: str) -> str:
    return f"{name} cannot be kept up; stopping vLLM"


# --- the stop ---
def got_signal(signum: int) -> str:
    return f"got {signal.Signals(signum).name}, stopping"


def error(err: BaseException) -> str:
    return f"error: {err}"
