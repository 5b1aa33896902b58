"""Every failure a user can meet, one class each, with a message that says what happened and what to do.

The UI turns these into chat text in one place (`user_message`); nothing else formats errors.
"""

from __future__ import annotations


class ChatAppError(Exception):
    """Base of our errors. `str(err)` is already fit to show a user."""


# --- configuration and records (settings, accounts, history) ---
class SettingsError(ChatAppError, ValueError):
    """A setting has a value we cannot use; `str()` is one line naming key, value and what is allowed."""


class AccountsError(ChatAppError, ValueError):
    """The users file or RCHAT_USERS cannot be used; `str()` says why in one line."""


class HistoryUnavailable(ChatAppError):
    """The database cannot be used as it is; `str()` says why and what to do, in one line."""


class CompareInputError(ChatAppError, ValueError):
    """A votes file, battle record or accuracy-run file cannot be used; `str()` names the file and line."""


# --- the server's life (supervisor, launcher) ---
class ServerStartError(ChatAppError):
    """vLLM could not be brought up; carries the tail of its log."""

    def __init__(self, message: str, *, log_tail: str = "") -> None:
        self.log_tail = log_tail
        super().__init__(message if not log_tail else f"{message}\n--- last lines of the server log ---\n{log_tail}")


class PortBusy(ServerStartError):
    """The port vLLM or the UI should use is taken by another process."""


class ServerExited(ServerStartError):
    """vLLM exited before /health answered."""


class StartupTimeout(ServerStartError):
    """/health did not answer within the startup timeout."""


class ModelNotUsable(ServerStartError):
    """The configured model path does not exist or is not a model."""


# --- one chat request (client) ---
class BackendUnavailable(ChatAppError):
    """The model server cannot be reached (down, starting or restarting)."""


class BackendTimeout(ChatAppError):
    """The server accepted the request but did not answer in time."""


class PromptTooLong(ChatAppError):
    """The conversation does not fit the model's context."""


class BackendRejected(ChatAppError):
    """The server refused the request (bad parameters, auth); not worth retrying."""


class BackendBusy(ChatAppError):
    """429 or 5xx after all retries."""


def user_message(err: BaseException) -> str:
    """The one place where an exception becomes chat text: ours verbatim, anything else generic."""
    if isinstance(err, ChatAppError):
        return str(err)
    return (
        "Something went wrong on our side while answering. Your message is kept; please send it "
        "again. If it keeps happening, check the app's log."
    )


# Notices (not answers) on the page: written by the page and by the history store, read by tests.
NOTICE = "Notice"
NOTICE_MARK = "ℹ️ "


def as_notice(text: str) -> str:
    return NOTICE_MARK + text
