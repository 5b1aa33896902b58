"""The launcher's console, word for word: one scripted run through the wording of backend/server/console.py
(a start, vLLM's phases, healthy, chat ready, a crash and its restart, a second crash given up on, Ctrl-C),
compared with tests/data/console-golden.txt. Nothing is started: the fast lane runs it.

A change of wording shows here as a diff. If it is meant, write the file again and commit it with the change:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_console.py
"""

from __future__ import annotations

import difflib
import os
import signal
from pathlib import Path

from backend.engine.vllm_command import LaunchSpec
from backend.server import compile_cache, console
from backend.server.console import ProgressPrinter, say
from backend.server.restart_policy import RestartPolicy
from backend.server.supervisor import PHASES, Progress

GOLDEN = Path(__file__).parent / "data" / "console-golden.txt"
URL, LOG = "http://localhost:7860", "/srv/rchat/logs/vllm-8000.log"
LAUNCH = LaunchSpec(
    argv=[],
    env={},
    device="cpu",
    dtype="bfloat16",
    why="this CPU computes bfloat16 natively (avx512_bf16)",
    threads="vLLM's own (one core kept for its API server)",
    compile="torch.compile (g++ and Python.h found)",
)
PHASE = dict(PHASES)  # vLLM's log line -> what the console calls that phase
# (seconds since the start, phase): a line at each change of phase, and every 10 s within a long one.
START = [
    (0.4, PHASE["non-default args"]),
    (2.0, PHASE["non-default args"]),
    (5.8, PHASE["Resolved architecture"]),
    (9.1, PHASE["Initializing a V1 LLM engine"]),
    (14.6, PHASE["Starting to load model"]),
    (15.2, PHASE["Loading weights took"]),
    (16.0, compile_cache.CACHED),
    (21.0, compile_cache.CACHED),
    (26.5, compile_cache.CACHED),
    (34.9, PHASE["KV cache size"]),
    (36.3, PHASE["Starting vLLM server"]),
    (40.8, PHASE["Application startup complete"]),
]


def scripted_run() -> None:
    for line in console.starting("http://127.0.0.1:8000", "/srv/rchat/models/smollm2-135m-instruct", LOG, LAUNCH):
        say(line)
    printer = ProgressPrinter(publish=lambda _phase: None)
    for elapsed, phase in START[:5]:
        printer(Progress(elapsed, phase))
    say(console.page_up(URL, 4.2))
    for elapsed, phase in START[5:]:
        printer(Progress(elapsed, phase))
    say(console.healthy(41.3))
    say(console.chat_ready(URL, 42.0))

    policy = RestartPolicy(max_restarts=1, window=600)
    say(console.restarting("vLLM", "exited with code -9", policy.record_crash(now=100.0), policy))
    restart = ProgressPrinter(publish=lambda _phase: None)
    for elapsed, phase in START[::3]:
        restart(Progress(elapsed, phase))
    say(console.healthy_again("vLLM"))
    second = policy.record_crash(now=160.0)
    reason = console.gave_up("vLLM", "exited with code -9", second, policy, LOG)
    say(console.gave_up_error(reason, "INFO ... Loading weights took 0.41 seconds\nKilled"))
    say(console.PAGE_STAYS_UP)

    say(console.got_signal(signal.SIGINT))
    say(console.STOPPING_VLLM)
    say(console.ALL_STOPPED)


def test_the_console_of_a_start_a_crash_a_restart_giving_up_and_ctrl_c_reads_as_the_golden_file(capsys) -> None:
    scripted_run()
    printed = capsys.readouterr().err
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(printed)
    golden = GOLDEN.read_text()
    diff = "".join(difflib.unified_diff(golden.splitlines(True), printed.splitlines(True), "golden", "printed"))
    assert printed == golden, f"the console's wording changed (UPDATE_GOLDEN=1 writes it, if meant):\n{diff}"
