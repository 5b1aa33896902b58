"""How the suite spreads over the cores: `./run_tests.sh` (what CI runs) starts two pytest-xdist workers.

Two: the suite keeps both cores of the 2-core CI host busy nearly all the run, and a third worker was no
faster there (docs/guide.md has the runs), while its vLLM servers shared a core with another worker's.
Each file runs whole on one worker (its module fixtures start once), as xdist's loadfile does, with three
changes, to spend less of the cores on starting things, to end together, and to keep vLLM off the
other workers' core:
- The files on the session's real vLLM (conftest.launched, and conftest.vllm_server, which reads the
  same server) form one unit on one worker, so that its server starts once in the run, not once per worker.
- The heaviest units go first: xdist would order units by their number of tests, which starts the
  slowest file (a dozen real vLLM starts) last and leaves one worker idle at the end. That file's
  tests are units of their own (each starts its own service), so it no longer runs on one worker.
- Each worker's vLLM servers compute on CPUs of their own (`core_env`). By default vLLM binds its
  compute thread to the first core, so two workers' servers took turns on it while the other core
  waited: two servers each streaming 600 tokens took 52-60 s, against 38-43 s on a core each.
"""

from __future__ import annotations

from pathlib import PurePosixPath

# The fixture that starts the session's real vLLM (conftest.vllm_server reads its server), and the
# files whose tests use it: one unit, named for the fixture. `missing` keeps the list whole.
SHARED_FIXTURE = "launched"
SHARED_FILES = frozenset(
    {
        "test_accuracy_run.py",
        "test_booth_page.py",
        "test_chat_client.py",
        "test_chat_page.py",
        "test_compare_page.py",
        "test_engine_metrics.py",
        "test_live_follow.py",
        "test_qa_browser.py",
        "test_qa_records.py",
        "test_replay.py",
        "test_self_test.py",
        "test_soak.py",
        "test_supervisor.py",
        "test_user_commands_key.py",
    }
)

# Files whose tests are units of their own: each starts its own vLLM (start_service.sh), and together they
# are a quarter of the suite's work, too long for one worker to carry while the other ends early.
ONE_UNIT_PER_TEST = frozenset({"test_start_service.py"})

# Units in the order they start, heaviest first (a unit starting with one of these); the rest follow in
# their usual order.
HEAVIEST_FIRST = (
    "test_start_service.py::test_signal_to_start_script_leaves_nothing_running[SIGKILL-ready]",
    SHARED_FIXTURE,
    "test_start_service.py::test_every_crash",
    "test_bench_interrupt.py",
    "test_start_service.py",
    "test_supervision.py",
)


def core_env(worker: str, workers: int, cpus: list[int]) -> dict[str, str]:
    """vLLM's thread binding for xdist worker `worker` ("gw1") of `workers`: CPUs of its own, as many as
    there are for each (one each when there are fewer CPUs than workers, in turn)."""
    if not worker.startswith("gw") or len(cpus) < 2:
        return {}
    index = int(worker[2:])
    mine = cpus[index::workers] if workers <= len(cpus) else [cpus[index % len(cpus)]]
    return {"VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, mine)), "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}


def file_of(nodeid: str) -> str:
    return PurePosixPath(nodeid.split("::", 1)[0]).name


def unit_of(nodeid: str) -> str:
    """The scheduling unit of a test: its file, the shared unit of the session vLLM's files, or itself."""
    file = file_of(nodeid)
    if file in ONE_UNIT_PER_TEST:
        return f"{file}::{nodeid.split('::', 1)[1]}"
    return SHARED_FIXTURE if file in SHARED_FILES else file


def rank(nodeid: str) -> int:
    unit = unit_of(nodeid)
    return next((i for i, first in enumerate(HEAVIEST_FIRST) if unit.startswith(first)), len(HEAVIEST_FIRST))


def missing(items: list) -> set[str]:
    """Files with a test on the session's vLLM that SHARED_FILES does not name."""
    return {file_of(i.nodeid) for i in items if SHARED_FIXTURE in i.fixturenames} - SHARED_FILES


def make_scheduler(config, log):
    """xdist's loadfile scheduling over our units, in the order the workers collected them (`rank`)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False  # keep our order, not "most tests first"
    return ByUnit(config, log)
