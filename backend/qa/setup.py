"""What app.py needs to decide once at start: is there a history database, and who may log in.

`history_store()` prepares the SQLite file (create, or migrate after a backup) and returns the data
layer, or None with a reason the page shows on every new chat. `login_mode()` says whether the page
asks for a password (users configured) or logs the single local user in by itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from backend.qa.accounts import AccountsError, ensure_auth_secret, load_users
from backend.qa.history_db import HistoryUnavailable, inspect, prepare
from backend.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class QaSetup:
    store: object | None  # backend.qa.history_store.HistoryStore, imported only when used
    history_off_reason: str
    users: dict[str, str]

    @property
    def passwords(self) -> bool:
        return bool(self.users)


def history_problem(settings: Settings, *, change: bool = True) -> str:
    """'' when the history database is usable, else why not. With change, it is created or migrated
    now if needed; without, only looked at."""
    if not settings.history:
        return "History is off (RCHAT_HISTORY=false): answers are not saved."
    try:
        log.info((prepare if change else inspect)(settings.history_path))
    except HistoryUnavailable as err:
        return f"History is off: {err} Answers in this chat are not saved."
    return ""


def set_up(settings: Settings) -> QaSetup:
    """Raises AccountsError for an unusable users file (the launcher checks this before starting)."""
    users = load_users(settings)
    ensure_auth_secret(settings)
    reason = history_problem(settings)
    store = None
    if not reason:
        from backend.qa.history_store import HistoryStore

        store = HistoryStore(settings.history_path)
    return QaSetup(store=store, history_off_reason=reason, users=users)


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
