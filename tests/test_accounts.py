"""Login users and the auth secret: hashed on disk, checked, kept across restarts, bad files explained."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from backend.qa.accounts import AccountsError, check_password, ensure_auth_secret, keep_in_file, load_users, set_user
from backend.settings import PROJECT_ROOT
from tests.conftest import make_settings


async def test_a_user_added_by_the_cli_logs_in_with_that_password_only(tmp_path: Path) -> None:
    env = {"RCHAT_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "backend", "user", "add", "alice", "--password-stdin"],
        input="correct horse battery\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
    )
    assert out.returncode == 0, out.stderr
    stored = (tmp_path / "users.json").read_text()
    assert "correct horse" not in stored and json.loads(stored)["alice"].startswith("$argon2id$")
    assert stat.S_IMODE((tmp_path / "users.json").stat().st_mode) == 0o600
    users = load_users(make_settings(tmp_path, data_dir=tmp_path))
    assert await check_password(users, "alice", "correct horse battery")
    assert not await check_password(users, "alice", "wrong password")
    assert not await check_password(users, "bob", "correct horse battery")


def test_a_password_in_clear_is_refused_with_the_command_to_fix_it(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, users={"alice": "hunter22"})
    with pytest.raises(AccountsError, match="not an Argon2 hash.*python -m backend user add"):
        load_users(settings)


def test_a_broken_users_file_gives_one_line(tmp_path: Path) -> None:
    (tmp_path / "users.json").write_text("{not json")
    with pytest.raises(AccountsError) as err:
        load_users(make_settings(tmp_path, data_dir=tmp_path))
    assert "users.json" in str(err.value) and "\n" not in str(err.value)


def test_short_passwords_and_odd_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(AccountsError, match="at least 8"):
        set_user(tmp_path / "users.json", "alice", "short")
    with pytest.raises(AccountsError, match="not allowed"):
        set_user(tmp_path / "users.json", "al ice", "long enough password")


def test_the_auth_secret_is_generated_once_and_kept(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, data_dir=tmp_path)
    first = ensure_auth_secret(settings)
    assert len(first) >= 32 and stat.S_IMODE(settings.auth_secret_file.stat().st_mode) == 0o600
    assert ensure_auth_secret(settings) == first  # a restart keeps everyone logged in
    assert ensure_auth_secret(make_settings(tmp_path, data_dir=tmp_path, auth_secret="given")) == "given"


def test_an_empty_auth_secret_file_gets_a_secret_and_pages_agree_on_one(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, data_dir=tmp_path)
    settings.auth_secret_file.write_text("")
    first = ensure_auth_secret(settings)
    assert len(first) >= 32 and settings.auth_secret_file.read_text().strip() == first
    assert keep_in_file(settings.auth_secret_file, "another page's candidate") == first  # the file wins
    assert not list(tmp_path.glob("*.tmp"))
