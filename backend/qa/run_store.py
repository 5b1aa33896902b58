"""One accuracy run stored as one chat in the history database, the way the page stores its chats.

The page writes through Chainlit's data layer, which needs a live Chainlit session; a command-line
run has none, so this writes the same rows itself, with sqlite3 into the SQLite file or with asyncpg into
PostgreSQL (RCHAT_DATABASE_URL), on the schema backend/qa/history_db.py owns:
per question a user message, and per sample an `on_message` run step under it holding the answer message
(and a thinking step when the model reasoned), the answer's record under RECORD_KEY. Chainlit's page
then lists the run in the owner's sidebar, resumes it, and shows the feedback (verdict) buttons
under every sample; export reads it like any chat. Each answer is committed as soon as it is
stored, so an interrupted run keeps everything answered before the interruption.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from backend.qa import history_pg
from backend.qa.history_db import BUSY_TIMEOUT_S, prepare
from backend.qa.history_pg import PgHistory, fetch

RUN_STEP = "on_message"  # a name Chainlit's page treats as a run: its last answer gets the verdict buttons


class RunStore:
    def __init__(self, source: Path | PgHistory, *, user: str, name: str, metadata: dict[str, Any]) -> None:
        """Create the run's chat for `user` (HistoryUnavailable if the history cannot be used)."""
        self.source, self.name = source, name
        self.db: sqlite3.Connection | None = None
        if isinstance(source, PgHistory):
            history_pg.prepare(source.url)
        else:
            prepare(source)
            self.db = sqlite3.connect(source, timeout=BUSY_TIMEOUT_S)  # the page may be writing at the same moment
            self.db.row_factory = sqlite3.Row
        self._last = datetime.now(UTC).replace(tzinfo=None)
        self.thread_id = str(uuid.uuid4())
        with self._transaction():
            user_id = self._user_id(user)
            self._execute(
                'INSERT INTO threads (id, "createdAt", name, "userId", "userIdentifier", tags, metadata) '
                "VALUES (:id, :at, :name, :user_id, :user, '[]', :metadata)",
                {
                    "id": self.thread_id,
                    "at": self._now(),
                    "name": name,
                    "user_id": user_id,
                    "user": user,
                    "metadata": json.dumps(metadata),
                },
            )

    def _execute(self, query: str, parameters: dict[str, Any]) -> list[dict[str, Any]]:
        """One statement with :named parameters, on whichever database the history is."""
        if self.db is None:
            return fetch(self.source.url, query, parameters)  # type: ignore[union-attr]  # PgHistory
        return [dict(row) for row in self.db.execute(query, parameters)]

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """SQLite: one commit for the statements inside. PostgreSQL: each statement commits on its own."""
        if self.db is None:
            yield
            return
        with self.db:
            yield

    def _now(self) -> str:
        """Chainlit's timestamp format, strictly increasing: the page orders a chat's steps by it."""
        now = datetime.now(UTC).replace(tzinfo=None)
        self._last = max(now, self._last + timedelta(microseconds=1))
        return self._last.isoformat() + "Z"

    def _user_id(self, identifier: str) -> str:
        """The user's id, creating the user as Chainlit's first login would (the login then finds it)."""
        find = "SELECT id FROM users WHERE identifier = :identifier"
        if rows := self._execute(find, {"identifier": identifier}):
            return str(rows[0]["id"])
        self._execute(
            "INSERT INTO users (id, identifier, metadata, \"createdAt\") VALUES (:id, :identifier, '{}', :at) "
            "ON CONFLICT (identifier) DO NOTHING",  # a first login elsewhere may win: then its id
            {"id": str(uuid.uuid4()), "identifier": identifier, "at": datetime.now().isoformat() + "Z"},
        )
        return str(self._execute(find, {"identifier": identifier})[0]["id"])

    def _step(
        self,
        *,
        name: str,
        kind: str,
        output: str = "",
        parent: str | None = None,
        metadata: dict[str, Any] | None = None,
        **extra: Any,
    ) -> str:
        step_id, now = str(uuid.uuid4()), self._now()
        row = {
            "id": step_id,
            "name": name,
            "type": kind,
            "threadId": self.thread_id,
            "parentId": parent,
            "streaming": False,
            "isError": False,
            "waitForAnswer": False,
            "output": output,
            "metadata": json.dumps(metadata or {}),
            "tags": "[]",
            "generation": "{}",
            "input": "",
            "createdAt": now,
            "start": now,
            "end": now,
            **extra,
        }
        columns = ", ".join(f'"{key}"' for key in row)
        self._execute(f"INSERT INTO steps ({columns}) VALUES ({', '.join(':' + key for key in row)})", row)
        return step_id

    def add_question(self, text: str) -> str:
        """The question as the user's message; returns its id (the record's question_id, as on the page)."""
        with self._transaction():
            return self._step(name="User", kind="user_message", output=text)

    def add_answer(
        self,
        *,
        question_step: str,
        question: str,
        shown: str,
        record: dict[str, Any],
        author: str,
        reasoning: str = "",
        thinking_label: str = "",
    ) -> str:
        """One sample: its run step, its thinking step (if any) and the answer message; returns the message id."""
        with self._transaction():
            run = self._step(name=RUN_STEP, kind="run", parent=question_step, input=question, showInput="json")
            if reasoning:
                self._step(
                    name=thinking_label or "Thought",
                    kind="llm",
                    output=reasoning,
                    parent=run,
                    showInput="false",
                    defaultOpen=False,
                )
            return self._step(name=author, kind="assistant_message", output=shown, parent=run, metadata=record)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
