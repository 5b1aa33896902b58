"""What app.py needs to decide once at start: is there a history database, and who may log in.

`set_up()` prepares the history database (the SQLite file: create, or migrate after a backup; or
PostgreSQL with RCHAT_DATABASE_URL: create, or migrate), or says why there is none, in words the page
shows on every new chat (the page's data layer on it is backend/page/history_layer.py), and reads the
users who may log in (none: the single local user, no password).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial

from backend.qa.accounts import AccountsError, ensure_auth_secret, load_users
from backend.qa.history_db import HistoryUnavailable, inspect, prepare
from backend.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class QaSetup:
    history_off_reason: str  # '' when the history database is usable
    users: dict[str, str]

    @property
    def history(self) -> bool:
        return not self.history_off_reason

    @property
    def passwords(self) -> bool:
        return bool(self.users)


def history_problem(settings: Settings, *, change: bool = True) -> str:
    """'' when the history database is usable, else why not. With change, it is created or migrated
    now if needed; without, only looked at. The SQLite file, or PostgreSQL with RCHAT_DATABASE_URL."""
    if not settings.history:
        return "History is off (RCHAT_HISTORY=false): answers are not saved."
    try:
        if settings.history_url:
            from backend.qa import history_pg

            log.info((history_pg.prepare if change else history_pg.inspect)(settings.history_url))
        else:
            log.info((prepare if change else inspect)(settings.history_path))
    except HistoryUnavailable as err:
        return f"History is off: {err} Answers in this chat are not saved."
    return ""


def set_up(settings: Settings) -> QaSetup:
    """Raises AccountsError for an unusable users file (the launcher checks this before starting)."""
    users = load_users(settings)
    reason = history_problem(settings)
    _auth_secret(settings, shared=bool(settings.history_url) and not reason)
    return QaSetup(history_off_reason=reason, users=users)


def _auth_secret(settings: Settings, *, shared: bool) -> None:
    """With PostgreSQL, the secret lives in the database: every page on every machine signs login
    cookies alike. Else (or if the database went away since it was prepared) in this machine's file."""
    if shared:
        from backend.qa.history_pg import keep_secret

        try:
            ensure_auth_secret(settings, keep=partial(keep_secret, settings.history_url))
            return
        except HistoryUnavailable as err:
            log.warning("auth secret kept in %s instead of the database: %s", settings.auth_secret_file, err)
    ensure_auth_secret(settings)


def preflight(settings: Settings) -> list[str]:
    """Problems to print before starting anything: a bad users file stops us, a bad database warns.
    Changes nothing on disk, so that a start that fails later (or `backend check`) leaves data as it was."""
    problems = []
    try:
        load_users(settings)
    except AccountsError as err:
        problems.append(f"error: {err}")
    reason = history_problem(settings, change=False)  # the page itself creates or migrates it
    if reason:
        problems.append(f"warning: {reason}")
    return problems
