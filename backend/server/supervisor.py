"""The vLLM process supervisor: start, wait for /health, report progress, stop leaving nothing behind.

    with VLLMServer(settings) as server:      # returns only once /health answers
        ...                                    # server.url_for("v1"), server.api_key

Any exit before /health answers (code 0 included) raises at once with the log tail. In external mode
(`RCHAT_BASE_URL` set) nothing is launched: the same object waits on that server's /health.
"""

from __future__ import annotations

import collections
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from backend.engine.cpu_compile import INDUCTOR_ENV
from backend.engine.vllm_command import LaunchSpec, build_launch, model_problem, server_environ
from backend.errors import ModelNotUsable, PortBusy, ServerExited, ServerStartError, StartupTimeout
from backend.readiness import Awaited, Outcome, Readiness, never_gone, process_gone, wait_ready
from backend.server import compile_cache, processes
from backend.settings import Settings, new_api_key

STOP_GRACE = 15.0
LOG_TAIL_LINES = 40

# Log markers of vLLM's start-up, in order; the last one seen names the phase shown to the user.
PHASES = (
    ("non-default args", "reading the configuration"),
    ("Resolved architecture", "resolving the model"),
    ("Initializing a V1 LLM engine", "starting the engine"),
    ("Starting to load model", "loading weights"),
    ("Loading weights took", "weights loaded, sizing the KV cache"),
    ("Compiling a graph", "compiling the model (slow the first time)"),
    ("Warming up model for the compilation", "compiling the model"),  # on a CPU: see compile_phase below
    ("Directly load the compiled graph", "loading the compiled model from cache"),
    ("KV cache size", "allocating the KV cache"),
    ("Capturing CUDA graph", "capturing CUDA graphs"),
    ("Starting vLLM server", "starting the API server"),
    ("Application startup complete", "ready"),
)


@dataclass
class Progress:
    """What the wait loop reports to whoever shows progress."""

    elapsed: float
    phase: str


def read_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Last `lines` lines of a log file ('' if there is none)."""
    try:
        with open(path, errors="replace") as fh:
            return "".join(collections.deque(fh, maxlen=lines)).rstrip()
    except FileNotFoundError:
        return ""


def phase_of(log_text: str, current: str = "launching") -> str:
    """The latest start-up phase whose marker appears in `log_text`."""
    latest, latest_pos = current, -1
    for marker, phase in PHASES:
        pos = log_text.rfind(marker)
        if pos > latest_pos:
            latest, latest_pos = phase, pos
    return latest


class VLLMServer:
    """Owns one vLLM server process group (or, in external mode, just watches a URL)."""

    def __init__(
        self,
        settings: Settings,
        *,
        api_key: str | None = None,
        log_path: Path | None = None,
        launch: LaunchSpec | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.settings = settings
        self.api_key = api_key or settings.api_key.get_secret_value() or new_api_key()
        self.log_path = log_path or settings.log_dir / f"vllm-{settings.vllm_port}.log"
        self.launch = launch or build_launch(settings, api_key=self.api_key)
        self.on_progress = on_progress
        self.proc: subprocess.Popen | None = None
        self.phase = "not started"
        self.started_at: float | None = None
        self.ready_after: float | None = None
        self.compile_key = ""  # a compiled CPU start: what shapes its graph (backend/server/compile_cache.py)

    # --- context manager ---
    def __enter__(self) -> VLLMServer:
        try:
            self.start()
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return self.settings.server_url

    def url_for(self, *parts: str) -> str:
        return "/".join([self.url, *parts])

    # --- life cycle ---
    def start(self) -> None:
        """Launch vLLM in its own process group; returns at once (use wait_healthy)."""
        self.started_at = time.monotonic()
        if self.settings.external:
            self.phase = "waiting for the external server"
            return
        self.check_can_start()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")  # one log per run: the tail must be this run's
        env = server_environ(os.environ, self.launch.env)
        self.compile_key = ""
        if INDUCTOR_ENV in self.launch.env and "--enforce-eager" not in self.launch.argv:
            self.compile_key = compile_cache.launch_key(self.launch.argv, self.launch.env, self.settings.resolved_model)
        self.proc = processes.spawn_group(self.launch.argv, env=env, log_path=self.log_path)
        self.phase = "launching"

    def check_can_start(self) -> None:
        """Refuse a model that is not there and a port that is taken, before anything is launched."""
        problem = model_problem(self.settings)
        if problem:
            raise ModelNotUsable(f"Cannot start the model server: {problem}.")
        host, port = self.settings.vllm_host, self.settings.vllm_port
        if not processes.port_is_free(host, port):
            raise PortBusy(
                f"Cannot start the model server: port {port} on {host} is already in use by "
                f"{processes.port_holder(port)}. Stop that process or set RCHAT_VLLM_PORT "
                "to a free port."
            )

    # --- what supervision needs (see backend/server/supervision.py) ---
    name = "vLLM"

    def awaited(self) -> Awaited:
        """What "ready" means for the server just started: /health, within the start-up timeout."""
        assert self.started_at is not None, "start() first"
        return Awaited(
            self.url_for("health"),
            self.settings.startup_timeout,
            started=self.started_at,
            gone=process_gone(self.proc) if self.proc is not None else never_gone,
        )

    def start_failure(self, outcome: Outcome) -> ServerStartError:
        if outcome.state is Readiness.TIMED_OUT:
            return StartupTimeout(
                f"The model server did not become healthy within {self.settings.startup_timeout:.0f} s "
                f"(last phase: {self.phase}). Raise RCHAT_STARTUP_TIMEOUT if the machine is slow.",
                log_tail=self.log_tail(),
            )
        return ServerExited(
            f"The model server {outcome.reason} before it was ready (phase: {self.phase}). Its log is {self.log_path}.",
            log_tail=self.log_tail(),
        )

    def on_wait(self, _outcome: Outcome) -> None:
        self._report_progress()

    def wait_healthy(self) -> float:
        """Block until /health answers; return seconds since start. Fails fast if vLLM exits."""
        outcome = wait_ready(self.awaited(), on_wait=self.on_wait)
        if outcome.state is not Readiness.READY:
            raise self.start_failure(outcome)
        self.ready_after, self.phase = outcome.elapsed, "ready"
        return self.ready_after

    def _report_progress(self) -> None:
        if self.proc is not None:
            self.phase = phase_of(read_tail(self.log_path, 200), self.phase)
            if self.phase == "compiling the model" and self.compile_key:
                self.phase = compile_cache.compile_phase(self.compile_key, self._compile_folder())
        if self.on_progress and self.started_at is not None:
            self.on_progress(Progress(elapsed=time.monotonic() - self.started_at, phase=self.phase))

    def note_ready(self) -> None:
        """Once healthy: mark a compiled CPU start's graph as compiled on this machine (compile_cache.py)."""
        if self.compile_key:
            compile_cache.remember(self.compile_key, self._compile_folder(), took_s=self.ready_after)

    def _compile_folder(self) -> Path:
        return Path(self.launch.env[INDUCTOR_ENV])

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return read_tail(self.log_path, lines)

    def stop(self, *, grace: float = STOP_GRACE) -> int | None:
        """SIGTERM the group, grace period, SIGKILL. Safe to call any number of times."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        self.phase = "stopped"
        return processes.stop_group(proc, grace=grace)
