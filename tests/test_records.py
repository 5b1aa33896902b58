"""Typed records read what users' databases hold: a history made by main before records were typed
(commit 05f5f5f: two page answers, two accuracy-run answers) reads back identically."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from backend.qa.export import load_records
from backend.records import RECORD_KEY, RECORD_VERSION, AnswerRecord, answer_record

MADE_BEFORE = Path(__file__).parent / "data" / "history-made-by-05f5f5f.sqlite3"


def stored_records(path: Path) -> list[dict]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute('SELECT metadata FROM steps WHERE metadata LIKE \'%"rchat"%\' ORDER BY "createdAt"')
        return [json.loads(m)[RECORD_KEY] for (m,) in rows]
    finally:
        db.close()


def test_records_stored_before_versions_read_back_identically() -> None:
    records = stored_records(MADE_BEFORE)
    assert len(records) == 4 and all("version" not in r for r in records)
    for data in records:
        record = AnswerRecord.model_validate(data)
        assert record.version == 1 and record.stored() == data
        assert record.stamp.request["messages"][-1]["role"] == "user"
    with_engine = [AnswerRecord.model_validate(d) for d in records if d["stamp"]["engine"]]
    assert with_engine and all(r.stamp.engine.source for r in with_engine)


def test_an_old_history_exports_as_it_did(tmp_path: Path) -> None:
    copy = tmp_path / "history.sqlite3"
    shutil.copy(MADE_BEFORE, copy)
    rows = load_records(copy)
    assert len(rows) == 4 and [(r["verdict"] or {}).get("outcome") for r in rows].count("correct") == 3
    originals = {json.dumps(r["stamp"], sort_keys=True) for r in stored_records(MADE_BEFORE)}
    assert {json.dumps(r["stamp"], sort_keys=True) for r in rows} == originals
    assert all("battle" not in r for r in rows)


def test_a_new_record_says_its_version() -> None:
    meta = answer_record(
        question_id="q",
        question="Q?",
        sample=1,
        outcome="complete",
        reasoning="",
        answer="A.",
        grade=None,
        stamp={"engine": {"device": "cpu", "new_fact": 1}, "seed": 3},
    )[RECORD_KEY]
    assert meta["version"] == RECORD_VERSION and meta["kind"] == "answer" and meta["verdict"] is None
    assert meta["stamp"]["engine"] == {"device": "cpu", "new_fact": 1}  # facts we do not name are kept
