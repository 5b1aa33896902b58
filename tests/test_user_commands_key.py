"""The README's commands work with default settings: `qa run` and `replay` take the running app's API key.

With RCHAT_API_KEY empty the launcher draws a key per start. It leaves that key for this user's own
commands in a file beside its status file (mode 0600 from creation, removed when it stops), and the
commands use RCHAT_API_KEY if set, else that file while its launcher lives, else no key.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from backend.cli import _asking_settings
from backend.qa.export import load_records
from backend.server_status import commands_api_key, key_file, remove_key, write_key
from tests.conftest import make_settings
from tests.harness_cli import one_question, qa_run_cli, replay_cli, status_file_of


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # exited and reaped: its pid names no process now
    return proc.pid


def test_rchat_api_key_wins_over_a_live_launchers_key(tmp_path: Path) -> None:
    status = tmp_path / "backend-status-8000.json"
    write_key(key_file(status), "launcher-key", os.getpid())
    assert commands_api_key("from-env", status) == "from-env"


def test_a_live_launchers_key_is_used_when_rchat_api_key_is_empty(tmp_path: Path) -> None:
    status = tmp_path / "backend-status-8000.json"
    assert commands_api_key("", status) == ""  # no launcher: no key
    write_key(key_file(status), "launcher-key", os.getpid())
    assert commands_api_key("", status) == "launcher-key"


def test_a_crashed_launchers_key_file_is_ignored(tmp_path: Path) -> None:
    status = tmp_path / "backend-status-8000.json"
    write_key(key_file(status), "stale-key", dead_pid())
    assert commands_api_key("", status) == ""


def test_the_key_file_is_0600_from_its_creation_whatever_the_umask(tmp_path: Path, monkeypatch) -> None:
    created: list[tuple[str, int]] = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *args, **kwargs):
        fd = real_open(path, flags, mode, *args, **kwargs)
        if flags & os.O_CREAT:
            created.append((str(path), stat.S_IMODE(os.fstat(fd).st_mode)))  # the mode at the first moment
        return fd

    monkeypatch.setattr(os, "open", spy)
    old_umask = os.umask(0)  # the most permissive umask: the file must still be this user's alone
    try:
        path = key_file(tmp_path / "backend-status-8000.json")
        write_key(path, "k", os.getpid())
    finally:
        os.umask(old_umask)
    assert created and all(mode == 0o600 for _, mode in created), created
    info = path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.getuid()
    assert not list(tmp_path.glob("*.tmp-*"))  # the temporary file was renamed into place


def test_a_key_file_others_can_read_is_not_trusted(tmp_path: Path) -> None:
    status = tmp_path / "backend-status-8000.json"
    write_key(key_file(status), "k", os.getpid())
    key_file(status).chmod(0o644)
    assert commands_api_key("", status) == ""


def test_a_stopping_launcher_removes_only_its_own_key_file(tmp_path: Path) -> None:
    path = key_file(tmp_path / "backend-status-8000.json")
    write_key(path, "newer", os.getpid())
    remove_key(path, dead_pid())  # an older launcher stopping late leaves the newer one's key
    assert path.exists()
    remove_key(path, os.getpid())
    assert not path.exists()


def test_the_cli_asks_with_the_running_apps_key(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    write_key(key_file(settings.status_file), "launcher-key", os.getpid())
    assert _asking_settings(settings).api_key.get_secret_value() == "launcher-key"
    with_env = make_settings(tmp_path, api_key="mine")
    assert _asking_settings(with_env).api_key.get_secret_value() == "mine"


# --- the user's path, on the real server -----------------------------------------------------------------------


@pytest.mark.server
@pytest.mark.timeout(2400)  # a shared 2-core machine has taken over 600 s to start vLLM
def test_qa_run_and_replay_work_beside_a_running_app_without_rchat_api_key(
    launched: dict[str, str], tmp_path: Path
) -> None:
    """The session's launcher (conftest.launched) runs on defaults, RCHAT_API_KEY unset. That a stopped
    launcher takes its key file with it is checked where a launcher is stopped: test_start_service."""
    log_dir = Path(launched["RCHAT_LOG_DIR"])
    path = key_file(status_file_of(launched))
    env = {**launched, "RCHAT_DATA_DIR": str(tmp_path / "data")}  # this test's own history
    key = json.loads(path.read_text())["key"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and key
    assert key not in (log_dir / "serve.out").read_text()  # never in the launcher's log
    assert not any(key in p.read_text(errors="replace") for p in log_dir.rglob("*.log"))
    questions, results = one_question(tmp_path), tmp_path / "results"
    done = qa_run_cli(env, questions, results, "--parallel", "1", "--max-tokens", "8", samples=1)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "API key" not in said and "1 answer(s) stored" in said, said
    [record] = load_records(tmp_path / "data" / "history.sqlite3")
    assert record["answer"].strip(), record
    again = replay_cli(env, record["answer_id"])
    said = again.stdout + again.stderr
    assert again.returncode in (0, 1) and "API key" not in said, said  # identical or different, but replayed
    assert f"Replay of answer {record['answer_id']}" in again.stdout
    wrong = qa_run_cli({**env, "RCHAT_API_KEY": "not-the-key"}, questions, results, samples=1)
    assert wrong.returncode == 2 and "refused the API key" in wrong.stderr, wrong.stderr  # set, it wins
