"""Stop signals from a command's first moment (backend/stop_request.py): a Ctrl-C during the imports
ends the command without a stack trace, one before the launcher starts anything starts nothing, and
`nohup` keeps the chat up when its terminal closes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backend.settings import PROJECT_ROOT
from tests.conftest import ctrl_c_as_in_a_terminal, free_ports
from tests.harness_cli import PLAIN_PATH, BalancedService
from tests.ui_harness import wait_for

HELD = """
import signal
from backend.stop_request import StopRequest
signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts a command
stop = StopRequest.install()
signal.raise_signal(signal.SIGTERM)
signal.raise_signal(signal.SIGINT)
print(stop.signum, signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)
stop.signum = None
stop.release()
print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)
"""


def test_a_signal_is_held_until_released_and_nohup_is_kept() -> None:
    """In a process of its own: a SIGINT raised in pytest's reaches the handler python-socketio puts on
    the tests' event loop, which then cancels every task of the next async test."""
    done = subprocess.run(
        [sys.executable, "-c", HELD], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    # the first signal counts, neither ended the process, nohup's SIGHUP stays ignored; then the defaults
    assert done.stdout.split() == [str(int(signal.SIGTERM)), "True", "True", "True"], done.stdout


def our_handlers_are_in(pid: int) -> bool:
    """Whether backend/__main__.py has installed StopRequest, which the CLI's imports follow. It takes
    SIGTERM, which Python alone does not; a fixed delay could land before the interpreter itself is
    up (a loaded machine took over 0.2 s), where no program's code has run yet."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    caught = next(line for line in status if line.startswith("SigCgt"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def ctrl_c_at_once(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """`python -m backend ARGS` from a terminal, with Ctrl-C (SIGINT to its group) while it imports the
    CLI: its exit status and what it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "backend", *args],
        cwd=PROJECT_ROOT,
        env={**env, "PATH": PLAIN_PATH},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    wait_for(lambda: our_handlers_are_in(proc.pid), timeout=60, every=0.005)
    # Still in the imports: the CLI's settings (pydantic, a compiled library) are not loaded yet.
    assert "_pydantic_core" not in Path(f"/proc/{proc.pid}/maps").read_text(), "the imports were over"
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    return proc.returncode, output


@pytest.mark.parametrize("command", ["run", "check"])
def test_ctrl_c_while_a_command_imports_ends_it_without_a_stack_trace(tmp_path, command: str) -> None:
    ui_port, vllm_port = free_ports(2)
    env = {
        "RCHAT_LOG_DIR": str(tmp_path),
        "RCHAT_DATA_DIR": str(tmp_path / "data"),
        "RCHAT_UI_PORT": str(ui_port),
        "RCHAT_BASE_URL": f"http://127.0.0.1:{vllm_port}",  # nothing listens: nothing may be started anyway
    }
    code, output = ctrl_c_at_once(command, env=env)
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    if command == "run":  # the launcher: it says so, and starts no page
        assert code == 128 + signal.SIGINT, output
        assert "got SIGINT, stopping" in output and "chat page" not in output, output
    else:  # any other command ends as Ctrl-C ends it, so a shell running it (setup.sh) stops too
        assert code == -signal.SIGINT, output


def test_under_nohup_a_closed_terminal_leaves_the_chat_up(tmp_path, fake_server_url: str) -> None:
    with BalancedService(tmp_path, fake_server_url, workers=1, ignored=(signal.SIGHUP,)) as service:
        service.wait_for("chat ready at")
        service.proc.send_signal(signal.SIGHUP)
        time.sleep(2)
        assert service.proc.poll() is None, service.output
        assert "got SIGHUP" not in service.output
        service.proc.send_signal(signal.SIGTERM)
        assert service.proc.wait(timeout=60) == 128 + signal.SIGTERM, service.output
