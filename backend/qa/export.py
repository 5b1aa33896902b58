"""Export answers from the history database as JSONL (one answer per line) or Markdown.

Reads the database read-only. Each record is one answer (a regenerated answer is its own record, with
`sample` 2, 3, ...) with its question, reasoning, outcome, answer-key verdict, feedback and stamp.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from backend.qa.history_db import connect_readonly
from backend.records import RECORD_KEY


def load_records(path: Path, *, thread_id: str | None = None, user: str | None = None,
                 feedback_only: bool = False) -> list[dict[str, Any]]:
    db = connect_readonly(path)
    try:
        return _records(db, thread_id=thread_id, user=user, feedback_only=feedback_only)
    finally:
        db.close()


def _records(db: sqlite3.Connection, *, thread_id: str | None, user: str | None,
             feedback_only: bool) -> list[dict[str, Any]]:
    query = """
        SELECT s.id, s.output, s.metadata, s."createdAt", t.id AS thread_id, t.name AS thread_name,
               t."userIdentifier" AS user, f.value AS feedback_value, f.comment AS feedback_comment
        FROM steps s JOIN threads t ON t.id = s."threadId" LEFT JOIN feedbacks f ON f."forId" IN (s.id, s."parentId")
        WHERE s.type = 'assistant_message' AND s.metadata LIKE '%"rchat"%'
          AND (:thread IS NULL OR t.id = :thread) AND (:user IS NULL OR t."userIdentifier" = :user)
        ORDER BY t."createdAt", s."createdAt"
    """
    # Chainlit's page attaches feedback to the run step around the answer (its parent), not the message.
    records = []
    for row in db.execute(query, {"thread": thread_id, "user": user}):
        meta = json.loads(row["metadata"] or "{}").get(RECORD_KEY) or {}
        if meta.get("kind") != "answer":
            continue
        feedback = None
        if row["feedback_value"] is not None:
            feedback = {"rating": "up" if row["feedback_value"] == 1 else "down",
                        "comment": row["feedback_comment"] or ""}
        if feedback_only and feedback is None:
            continue
        outcome = meta.get("outcome")
        records.append({
            "thread_id": row["thread_id"], "thread_name": row["thread_name"], "user": row["user"],
            "answer_id": row["id"], "question_id": meta.get("question_id"), "question": meta.get("question"),
            "sample": meta.get("sample", 1),
            # "in progress" is only ever stored while streaming: finding it later means the app stopped.
            "outcome": "interrupted (the app stopped while answering)" if outcome == "in progress" else outcome,
            "reasoning": meta.get("reasoning", ""), "answer": meta.get("answer", ""),
            "shown": row["output"] or "",
            "verdict": meta.get("verdict"), "feedback": feedback, "stamp": meta.get("stamp", {}),
        })
    return records


def to_jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def to_markdown(records: list[dict[str, Any]]) -> str:
    lines: list[str] = ["# Chat export", ""]
    thread = None
    for r in records:
        if r["thread_id"] != thread:
            thread = r["thread_id"]
            lines += [f"## {r['thread_name'] or 'Untitled chat'}", "", f"*user {r['user']} · thread {thread}*", ""]
        stamp = r["stamp"]
        sample = f" (sample {r['sample']})" if r["sample"] != 1 else ""
        lines += [f"### Q{sample}: {r['question']}", ""]
        if r["reasoning"]:
            lines += ["<details><summary>Reasoning</summary>", "", r["reasoning"].strip(), "", "</details>", ""]
        lines += [r["answer"].strip() or "*(no answer text)*", ""]
        facts = [f"outcome: {r['outcome']}"]
        if r["verdict"]:
            facts.append(key_line(r["verdict"]))
        if r["feedback"]:
            comment = f" — {r['feedback']['comment']}" if r["feedback"]["comment"] else ""
            facts.append(f"feedback: {r['feedback']['rating']}{comment}")
        lines += [f"- {fact}" for fact in facts]
        lines += [f"- stamp: `{json.dumps(stamp, ensure_ascii=False, sort_keys=True)}`", ""]
    return "\n".join(lines)


def key_line(verdict: dict[str, Any]) -> str:
    """The answer key's verdict as the page showed it: outcome, the final answer read, the expected one."""
    # Records stored before the three outcomes have only "correct" (true / false) and no value read.
    outcome = verdict.get("outcome") or ("correct" if verdict.get("correct") else "incorrect")
    read = verdict.get("read")
    said = (f"final answer read as {read}" if read is not None else
            "no final answer found" if outcome == "unclear" else "value read not stored")
    return f"answer key: {outcome} — {said}; expected {verdict.get('expected')}"


def render(records: list[dict[str, Any]], fmt: str) -> str:
    return to_jsonl(records) if fmt == "jsonl" else to_markdown(records)
