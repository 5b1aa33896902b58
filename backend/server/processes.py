"""Process-group plumbing shared by the supervisor and the launcher: spawn, stop, who holds a port."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from contextlib import ExitStack, suppress
from pathlib import Path

import psutil

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it when the process that started it dies (even by SIGKILL)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn_group(argv: list[str], *, env: dict[str, str], log_path: Path, cwd: Path | None = None) -> subprocess.Popen:
    """Start argv as the leader of a new process group, output appended to log_path."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def group_members(pgid: int) -> list[psutil.Process]:
    """Live processes in a process group (zombies excluded: they hold nothing)."""
    members = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def _signal_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_group(proc: subprocess.Popen, *, grace: float = 15.0) -> int | None:
    """SIGTERM the whole group, wait up to `grace` seconds, then SIGKILL what is left. Idempotent."""
    pgid = proc.pid  # leader of its own session, so pgid == pid
    # Descendants that moved to another group still belong to us: remember them before signalling.
    try:
        strays = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        strays = []
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()
        if not group_members(pgid) and not any(_alive(p) for p in strays):
            break
        time.sleep(0.1)
    _signal_group(pgid, signal.SIGKILL)
    for p in strays:
        if _alive(p):
            p.kill()
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now (the kernel picks it)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` different free ports: all are held open while picking, since the kernel may hand a
    port it just released out again (two free_port() calls gave one port twice, seen once in CI)."""
    with ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def port_is_free(host: str, port: int) -> bool:
    """True if we could bind host:port right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def listener_pid(port: int) -> int | None:
    """The id of the process listening on a TCP port, if we may see it."""
    try:
        conns = psutil.net_connections(kind="inet")
    except psutil.AccessDenied:
        return None
    for conn in conns:
        if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
            return conn.pid
    return None


def port_holder(port: int) -> str:
    """'pid 123 (python -m vllm...)' for whoever listens on the port, or a hint when it can't be seen."""
    pid = listener_pid(port)
    if pid is None:
        return "an unknown process (or one we are not allowed to inspect)"
    try:
        cmd = " ".join(psutil.Process(pid).cmdline())[:120]
    except psutil.Error:
        cmd = "?"
    return f"pid {pid} ({cmd})"
