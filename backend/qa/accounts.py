"""Who may log in: password users from RCHAT_USERS and the users file, hashed with Argon2.

With no users configured the page logs everyone in as the single local user `local` (Chainlit's
header login, which needs no form), so a booth or one person on their own machine gets history
without a password. Configure users and the page asks for a password instead.

The auth secret signs Chainlit's login cookies. It is generated on first start and kept in
`<data_dir>/auth-secret` (mode 600), or in the PostgreSQL history database when RCHAT_DATABASE_URL
is set, so logins survive restarts and every page process signs alike; RCHAT_AUTH_SECRET overrides it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from backend.errors import AccountsError  # callers catch it from here too
from backend.settings import Settings

LOCAL_USER = "local"
USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
WRONG_PASSWORD_DELAY = 1.0  # seconds: slows password guessing, unnoticeable to a person
_hasher = PasswordHasher()


@cache
def _dummy_hash() -> str:
    """A real hash to check unknown names against, so a wrong name costs as long as a wrong password
    (made at the first login, not on import)."""
    return _hasher.hash(secrets.token_hex(8))


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def read_users_file(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    try:
        users = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise AccountsError(
            f"The users file {path} cannot be read ({err}); fix it or remove it, "
            "then add users again with `python -m backend user add NAME`."
        ) from None
    if not isinstance(users, dict) or not all(isinstance(v, str) for v in users.values()):
        raise AccountsError(f"The users file {path} must be a JSON object of user name -> password hash.")
    return users


def load_users(settings: Settings) -> dict[str, str]:
    """All password users (name -> Argon2 hash); RCHAT_USERS wins over the file for the same name."""
    users = {**read_users_file(settings.users_path), **settings.users}
    for name, hashed in users.items():
        if not USER_NAME.match(name):
            raise AccountsError(f"User name {name!r} is not allowed: use letters, digits and . _ @ - (up to 64).")
        if not hashed.startswith("$argon2"):
            raise AccountsError(
                f"The password of user {name!r} is not an Argon2 hash (passwords are never stored "
                "in clear): set it with `python -m backend user add NAME`."
            )
    return users


async def check_password(users: dict[str, str], name: str, password: str) -> bool:
    hashed = users.get(name) or _dummy_hash()
    try:
        ok = await asyncio.to_thread(_hasher.verify, hashed, password) and name in users
    except (VerificationError, InvalidHashError):
        ok = False
    if not ok:
        await asyncio.sleep(WRONG_PASSWORD_DELAY)
    return ok


def set_user(path: Path, name: str, password: str) -> None:
    """Add a user or change their password in the users file (written atomically, mode 600)."""
    if not USER_NAME.match(name):
        raise AccountsError(f"User name {name!r} is not allowed: use letters, digits and . _ @ - (up to 64).")
    if len(password) < 8:
        raise AccountsError("The password must have at least 8 characters.")
    users = read_users_file(path)
    users[name] = hash_password(password)
    _write_private(path, json.dumps(users, indent=2) + "\n")


def remove_user(path: Path, name: str) -> bool:
    users = read_users_file(path)
    if users.pop(name, None) is None:
        return False
    _write_private(path, json.dumps(users, indent=2) + "\n")
    return True


def _write_private(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(content)
    os.replace(tmp, path)


def ensure_auth_secret(settings: Settings, keep: Callable[[str], str] | None = None) -> str:
    """The secret that signs login cookies: from settings, else the one kept, else `candidate` kept now.

    `keep(candidate)` stores the candidate unless a secret is stored already, and returns the stored
    one; by default the file <data_dir>/auth-secret (backend/qa/setup.py passes the shared database's
    keeper instead when there is one). Every page process must sign with the same secret."""
    secret = settings.auth_secret.get_secret_value()
    if not secret:
        secret = (keep or partial(keep_in_file, settings.auth_secret_file))(secrets.token_urlsafe(48))
    os.environ["CHAINLIT_AUTH_SECRET"] = secret  # Chainlit reads it from the environment, at each use
    return secret


def keep_in_file(path: Path, candidate: str) -> str:
    """The secret in `path`, writing `candidate` there first if there is none. Pages starting at once
    agree: the file appears whole or not at all (a hard link, which fails if another process won)."""
    if _read_secret(path):
        return _read_secret(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(candidate + "\n")
    try:
        os.link(tmp, path)
    except FileExistsError:  # another page wrote it first (use theirs), or an empty file lies there
        if not _read_secret(path):
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    return path.read_text(encoding="utf-8").strip() if path.exists() else ""
