"""Export answers from the history database as JSONL (one answer per line) or Markdown.

Reads the database read-only: the SQLite file, or PostgreSQL with RCHAT_DATABASE_URL (`history_source`).
Each record is one answer (a regenerated answer is its own record, with `sample` 2, 3, ...) with its
question, reasoning, outcome, the answer key's grade (`verdict`), the QA user's verdict (`human_verdict`,
see backend/qa/verdicts.py), whether the two agree (`agreement`) and the stamp.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backend.qa.history_db import connect_readonly
from backend.qa.history_pg import PgHistory, fetch
from backend.qa.verdicts import agreement, describe_human, describe_key, human_verdict
from backend.records import RECORD_KEY, AnswerRecord, ExportRow
from backend.settings import Settings


def history_source(settings: Settings) -> Path | PgHistory:
    """Where the stored answers are: the SQLite file, or PostgreSQL with RCHAT_DATABASE_URL."""
    return PgHistory(settings.history_url) if settings.history_url else settings.history_path


def read_rows(source: Path | PgHistory, query: str, parameters: dict[str, Any]) -> list[dict[str, Any]]:
    """One read-only query (sqlite3's :named parameters) on either database; rows as dicts."""
    if isinstance(source, PgHistory):
        return fetch(source.url, query, parameters)
    db = connect_readonly(source)
    try:
        return [dict(row) for row in db.execute(query, parameters)]
    finally:
        db.close()


def load_records(
    source: Path | PgHistory,
    *,
    thread_id: str | None = None,
    user: str | None = None,
    human_only: bool = False,
    disagreements: bool = False,
) -> list[dict[str, Any]]:
    """Stored answers; `human_only`: those with a human verdict; `disagreements`: those whose human
    verdict differs from the answer key's. `source`: history_source(settings)."""
    records = _records(read_rows(source, RECORDS_QUERY, {"thread": thread_id, "user": user}))
    if disagreements:
        return [r for r in records if r["agreement"] == "disagree"]
    return [r for r in records if r["human_verdict"]] if human_only else records


# CAST: PostgreSQL cannot tell a parameter's type from `IS NULL` alone.
RECORDS_QUERY = """
    SELECT s.id, s.output, s.metadata, s."createdAt", t.id AS thread_id, t.name AS thread_name,
           t."userIdentifier" AS user, f.value AS feedback_value, f.comment AS feedback_comment
    FROM steps s JOIN threads t ON t.id = s."threadId" LEFT JOIN feedbacks f ON f."forId" IN (s.id, s."parentId")
    WHERE s.type = 'assistant_message' AND s.metadata LIKE '%"rchat"%'
      AND (CAST(:thread AS TEXT) IS NULL OR t.id = :thread)
      AND (CAST(:user AS TEXT) IS NULL OR t."userIdentifier" = :user)
    ORDER BY t."createdAt", s."createdAt"
"""


def _records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Chainlit's page attaches feedback (the human verdict) to the run step around the answer (its parent).
    records = []
    for row in rows:
        meta = json.loads(row["metadata"] or "{}").get(RECORD_KEY) or {}
        if meta.get("kind") == "battle":
            records += _battle_rows(row, meta)
        if meta.get("kind") != "answer":
            continue
        record = AnswerRecord.model_validate(meta)
        human = human_verdict(row["feedback_value"], row["feedback_comment"])
        grade = record.grade.stored() if record.grade else None
        # "in progress" is only ever stored while streaming: finding it later means the app stopped.
        outcome = "interrupted (the app stopped while answering)" if record.outcome == "in progress" else record.outcome
        records.append(
            ExportRow(
                **_where(row),
                answer_id=row["id"],
                question_id=record.question_id,
                question=record.question,
                sample=record.sample,
                outcome=outcome,
                reasoning=record.reasoning,
                answer=record.answer,
                shown=row["output"] or "",
                grade=grade,
                human_verdict=human,
                agreement=agreement(grade, human),
                stamp=record.stamp.stored(),
            ).stored()
        )
    return records


def _where(row: dict[str, Any]) -> dict[str, Any]:
    return {"thread_id": row["thread_id"], "thread_name": row["thread_name"], "user": row["user"]}


def _battle_rows(row: dict[str, Any], battle: dict[str, Any]) -> list[dict[str, Any]]:
    """A comparison's two answers as rows of their own (answer ids `<message id>:A` and `:B`)."""
    rows = []
    for label, meta in sorted((battle.get("answers") or {}).items()):
        record = AnswerRecord.model_validate({k: v for k, v in meta.items() if k != "answer_id"})
        rows.append(
            ExportRow(
                **_where(row),
                answer_id=f"{row['id']}:{label}",
                question_id=record.question_id,
                question=record.question,
                sample=1,
                outcome=record.outcome,
                reasoning=record.reasoning,
                answer=record.answer,
                shown="",
                grade=record.grade.stored() if record.grade else None,
                human_verdict=None,
                agreement=None,
                stamp=record.stamp.stored(),
                battle={
                    "id": battle.get("id"),
                    "label": label,
                    "contender": (battle.get("contenders") or {}).get(label),
                    "vote": battle.get("vote"),
                    "reasons": battle.get("reasons"),
                    "comment": battle.get("comment"),
                },
            ).stored()
        )
    return rows


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
            facts.append(describe_key(r["verdict"]))
        if r["human_verdict"]:
            facts.append(describe_human(r["human_verdict"]))
        if r["agreement"] == "disagree":
            facts.append("**the human verdict and the answer key disagree**")
        lines += [f"- {fact}" for fact in facts]
        lines += [f"- stamp: `{json.dumps(stamp, ensure_ascii=False, sort_keys=True)}`", ""]
    return "\n".join(lines)


def render(records: list[dict[str, Any]], fmt: str) -> str:
    return to_jsonl(records) if fmt == "jsonl" else to_markdown(records)
