"""The backend's command line as a user runs it, for the tests: a command in a second terminal
(`backend_cli`: `replay`, `qa run`, `user add`, `export`), a one-question file of the answer key,
the launcher without a page (`start_launcher`) and with several page processes behind HAProxy
(`BalancedService`).

A command gets exactly the environment it is given (plus a plain PATH), never this process's, so
that no RCHAT_ setting of the machine running the tests leaks into it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from backend.answers.grading.question_set import QUESTIONS_FILE
from backend.server import processes
from backend.server_status import read_status
from backend.settings import PAGE_REPLICA_ENV, PROJECT_ROOT
from tests.conftest import EAGER, free_ports

PLAIN_PATH = "/usr/bin:/bin"
KEYED = "Which number is bigger, 9.11 or 9.8?"  # in the answer key; the fake server answers it 9.8


def backend_cli(
    env: dict[str, str], *args: str, stdin: str | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """`python -m backend ARGS` in a second terminal with these settings; its output, never raised on."""
    return subprocess.run(
        [sys.executable, "-m", "backend", *args],
        input=stdin,
        check=False,
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={**env, "PATH": PLAIN_PATH},
        timeout=timeout,
    )


def replay_cli(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m backend replay ANSWER_ID [--json]`."""
    return backend_cli(env, "replay", *args, timeout=timeout)


def qa_run_args(questions: Path, results: Path, *extra: str, samples: int = 2) -> list[str]:
    """`qa run` over a questions file, its results in `results`: the arguments after `python -m backend`."""
    return ["qa", "run", "--samples", str(samples), "--questions", str(questions), "--results", str(results), *extra]


def qa_run_argv(questions: Path, results: Path, *extra: str, samples: int = 2) -> list[str]:
    """The whole command line of an accuracy run, for a test that starts it itself (to stop it, say)."""
    return [sys.executable, "-m", "backend", *qa_run_args(questions, results, *extra, samples=samples)]


def qa_run_cli(
    env: dict[str, str], questions: Path, results: Path, *extra: str, samples: int = 2, timeout: float = 600
) -> subprocess.CompletedProcess:
    """An accuracy run to its end, as backend_cli runs a command."""
    return backend_cli(env, *qa_run_args(questions, results, *extra, samples=samples), timeout=timeout)


def one_question(folder: Path) -> Path:
    """The answer key with KEYED as its only question, written to FOLDER/one.json for `qa run --questions`."""
    key = json.loads(QUESTIONS_FILE.read_text())
    key["questions"] = [q for q in key["questions"] if q["question"] == KEYED]
    assert len(key["questions"]) == 1, f"{KEYED!r} is not in the answer key once"
    path = folder / "one.json"
    path.write_text(json.dumps(key))
    return path


def add_user(data_dir: Path, name: str, password: str) -> None:
    """`backend user add NAME --password-stdin` for the history in `data_dir`."""
    done = backend_cli(
        {"RCHAT_DATA_DIR": str(data_dir)}, "user", "add", name, "--password-stdin", stdin=password + "\n"
    )
    assert done.returncode == 0, done.stdout + done.stderr


def status_file_of(env: dict[str, str]) -> Path:
    """The launcher's status file (Settings.status_file) for the RCHAT_* variables in `env`; its key file is beside it."""
    return Path(env["RCHAT_LOG_DIR"]) / f"backend-status-{env['RCHAT_UI_PORT']}.json"


def start_launcher(log_dir: Path) -> tuple[subprocess.Popen, dict[str, str]]:
    """`python -m backend serve` (the launcher and its vLLM, no page) on defaults, RCHAT_API_KEY unset as
    a user has it, vLLM eager; returns it once ready, with the environment that points a page or the CLI at it."""
    ui_port, vllm_port = free_ports(2)
    env = {
        "RCHAT_UI_PORT": str(ui_port),
        "RCHAT_VLLM_PORT": str(vllm_port),
        "RCHAT_LOG_DIR": str(log_dir),
        "RCHAT_DATA_DIR": str(log_dir / "data"),
        "RCHAT_STARTUP_TIMEOUT": "1800",  # a shared 2-core machine has taken over 600 s to start vLLM
        **EAGER,
    }
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RCHAT_")}
    launcher = processes.spawn_group(
        [sys.executable, "-m", "backend", "serve"],
        env={**clean, **env},
        log_path=log_dir / "serve.out",
        cwd=PROJECT_ROOT,
    )
    deadline = time.monotonic() + 1900
    while (status := read_status(status_file_of(env))) is None or status.state != "ready":
        if launcher.poll() is not None or time.monotonic() > deadline:
            processes.stop_group(launcher, grace=30)
            raise AssertionError((log_dir / "serve.out").read_text()[-3000:])
        time.sleep(1)
    return launcher, {**clean, **env}


class BalancedService:
    """`python -m backend run` with RCHAT_PAGE_WORKERS=2 in external mode; remembers what it printed."""

    def __init__(
        self, tmp_path: Path, server_url: str, workers: int = 2, ignored: tuple[int, ...] = (), **extra: str
    ) -> None:
        """`ignored`: signals it starts with ignored, as `nohup` starts a command with SIGHUP ignored."""
        self.ui_port, vllm_port = free_ports(2)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("RCHAT_")}
        env = {
            **clean,
            "RCHAT_BASE_URL": server_url,
            "RCHAT_PAGE_WORKERS": str(workers),
            "RCHAT_UI_PORT": str(self.ui_port),
            "RCHAT_VLLM_PORT": str(vllm_port),
            "RCHAT_LOG_DIR": str(tmp_path),
            "RCHAT_DATA_DIR": str(tmp_path / "data"),
            "RCHAT_UI_STARTUP_TIMEOUT": "300",
            **extra,
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "backend", "run"],
            env=env,
            cwd=PROJECT_ROOT,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: [signal.signal(sig, signal.SIG_IGN) for sig in ignored],
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    def wait_for(self, text: str, timeout: float = 400) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert self.proc.poll() is None and time.monotonic() < deadline, f"no {text!r} in:\n{self.output}"
            time.sleep(0.2)

    def internal_ports(self) -> list[int]:
        found = re.search(r"behind HAProxy on :\d+ \(internal ports ([\d, ]+)\)", self.output)
        assert found, self.output
        return [int(p) for p in found.group(1).split(", ")]

    def page_pid(self, index: int) -> int | None:
        """The pid of page `index` (its RCHAT_PAGE_REPLICA says which), or None while there is none."""
        for proc in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                if "backend.page.serve" in " ".join(proc.cmdline()) and proc.environ().get(
                    PAGE_REPLICA_ENV, ""
                ).startswith(f"{index}/"):
                    return proc.pid
            except psutil.Error:
                continue
        return None

    def __enter__(self) -> BalancedService:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the watchdog stops the rest
