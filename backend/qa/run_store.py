"""One accuracy run stored as one chat in the history database, the way the page stores its chats.

The page writes through Chainlit's data layer, which needs a live Chainlit session; a command-line
run has none, so this writes the same rows with sqlite3 on the schema backend/qa/history_db.py owns:
per question a user message, and per sample an `on_message` run step under it holding the answer message
(and a thinking step when the model reasoned), the answer's record under RECORD_KEY. Chainlit's page
then lists the run in the owner's sidebar, resumes it, and shows the feedback (verdict) buttons
under every sample; export reads it like any chat. Each answer is committed as soon as it is
stored, so an interrupted run keeps everything answered before the interruption.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from backend.qa.history_db import prepare

RUN_STEP = "on_message"  # a name Chainlit's page treats as a run: its last answer gets the verdict buttons


class RunStore:
    def __init__(self, path: Path, *, user: str, name: str, metadata: dict[str, Any]) -> None:
        """Create the run's chat for `user` (prepare() raises HistoryUnavailable if the file is unusable)."""
        prepare(path)
        self.path, self.name = path, name
        self.db = sqlite3.connect(path, timeout=10)  # the page may be writing at the same moment
        self._last = datetime.now(UTC).replace(tzinfo=None)
        self.thread_id = str(uuid.uuid4())
        with self.db:
            user_id = self._user_id(user)
            self.db.execute('INSERT INTO threads (id, "createdAt", name, "userId", "userIdentifier", tags, metadata) '
                            "VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (self.thread_id, self._now(), name, user_id, user, "[]", json.dumps(metadata)))

    def _now(self) -> str:
        """Chainlit's timestamp format, strictly increasing: the page orders a chat's steps by it."""
        now = datetime.now(UTC).replace(tzinfo=None)
        self._last = max(now, self._last + timedelta(microseconds=1))
        return self._last.isoformat() + "Z"

    def _user_id(self, identifier: str) -> str:
        """The user's id, creating the user as Chainlit's first login would (the login then finds it)."""
        row = self.db.execute("SELECT id FROM users WHERE identifier = ?", (identifier,)).fetchone()
        if row:
            return row[0]
        user_id = str(uuid.uuid4())
        self.db.execute('INSERT INTO users (id, identifier, metadata, "createdAt") VALUES (?, ?, ?, ?)',
                        (user_id, identifier, "{}", datetime.now().isoformat() + "Z"))
        return user_id

    def _step(self, *, name: str, kind: str, output: str = "", parent: str | None = None,
              metadata: dict[str, Any] | None = None, **extra: Any) -> str:
        step_id, now = str(uuid.uuid4()), self._now()
        row = {"id": step_id, "name": name, "type": kind, "threadId": self.thread_id, "parentId": parent,
               "streaming": False, "isError": False, "waitForAnswer": False, "output": output,
               "metadata": json.dumps(metadata or {}), "tags": "[]", "generation": "{}", "input": "",
               "createdAt": now, "start": now, "end": now, **extra}
        columns = ", ".join(f'"{key}"' for key in row)
        self.db.execute(f"INSERT INTO steps ({columns}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
        return step_id

    def add_question(self, text: str) -> str:
        """The question as the user's message; returns its id (the record's question_id, as on the page)."""
        with self.db:
            return self._step(name="User", kind="user_message", output=text)

    def add_answer(self, *, question_step: str, question: str, shown: str, record: dict[str, Any], author: str,
                   reasoning: str = "", thinking_label: str = "") -> str:
        """One sample: its run step, its thinking step (if any) and the answer message; returns the message id."""
        with self.db:
            run = self._step(name=RUN_STEP, kind="run", parent=question_step, input=question, showInput="json")
            if reasoning:
                self._step(name=thinking_label or "Thought", kind="llm", output=reasoning, parent=run,
                           showInput="false", defaultOpen=False)
            return self._step(name=author, kind="assistant_message", output=shown, parent=run, metadata=record)

    def close(self) -> None:
        self.db.close()
