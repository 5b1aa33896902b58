"""Battles: two answers side by side and the QA user's vote, read from a votes file or the history.

A votes file is JSONL, one battle a line: `{"a": NAME, "b": NAME, "winner": "a" | "b" | "tie" |
"both_bad"}`, optionally with `"tag": str` (the question's tag). In the history a battle is a record
of kind "battle" (see `battles_from_records`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.errors import CompareInputError
from backend.qa.export import read_rows
from backend.qa.history_pg import PgHistory
from backend.records import RECORD_KEY

OUTCOMES = ("a", "b", "tie", "both_bad")
TIES = ("tie", "both_bad")  # "both bad" is a tie: neither answer beat the other


@dataclass(frozen=True)
class Battle:
    a: str
    b: str
    winner: str  # one of OUTCOMES
    tag: str | None = None

    @property
    def points_a(self) -> float:
        """What A scored: 1 for a win, 0 for a loss, half for a tie (or both bad)."""
        return 1.0 if self.winner == "a" else 0.0 if self.winner == "b" else 0.5

    @property
    def is_tie(self) -> bool:
        return self.winner in TIES


def battle_from(item: Any) -> Battle:
    """One battle from a votes file's object; CompareInputError says what is wrong with it."""
    if not isinstance(item, dict):
        raise CompareInputError(f"expected a JSON object, got {type(item).__name__}")
    for key in ("a", "b"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise CompareInputError(f'"{key}" must be a contender\'s name (a non-empty string)')
    if item["a"] == item["b"]:
        raise CompareInputError(f'"a" and "b" are the same contender ({item["a"]}): a battle needs two')
    if item.get("winner") not in OUTCOMES:
        raise CompareInputError(f'"winner" must be one of {", ".join(OUTCOMES)}, not {item.get("winner")!r}')
    tag = item.get("tag")
    if tag is not None and not isinstance(tag, str):
        raise CompareInputError(f'"tag" must be a string, not {tag!r}')
    return Battle(item["a"], item["b"], item["winner"], tag)


def parse_votes(text: str, *, source: str = "votes") -> list[Battle]:
    """The battles of a JSONL votes file (blank lines skipped); a bad line raises with its number."""
    battles = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            battles.append(battle_from(json.loads(line)))
        except json.JSONDecodeError as err:
            raise CompareInputError(f"{source}, line {number}: not JSON ({err.msg})") from None
        except CompareInputError as err:
            raise CompareInputError(f"{source}, line {number}: {err}") from None
    if not battles:
        raise CompareInputError(
            f"{source} holds no votes: write one battle a line, "
            '{"a": NAME, "b": NAME, "winner": "a" | "b" | "tie" | "both_bad"}'
        )
    return battles


def read_votes(path: Path) -> list[Battle]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CompareInputError(f"cannot read the votes file {path}: {err}") from None
    return parse_votes(text, source=str(path))


def battles_from_records(records: list[dict[str, Any]]) -> list[Battle]:
    """The voted battles among stored records; other kinds and battles not voted on yet are skipped.

    A battle record is a dict `{"kind": "battle", "contenders": {"A": name, "B": name},
    "vote": "a" | "b" | "tie" | "both_bad" | None, "tag": str | None, ...}` ("a" means contender A won);
    the page stores it under RECORD_KEY of a message's metadata. A malformed one raises CompareInputError.
    """
    battles = []
    for number, record in enumerate(records, start=1):
        if record.get("kind") != "battle" or record.get("vote") is None:
            continue
        contenders = record.get("contenders") or {}
        try:
            battles.append(
                battle_from(
                    {
                        "a": contenders.get("A"),
                        "b": contenders.get("B"),
                        "winner": record["vote"],
                        "tag": record.get("tag"),
                    }
                )
            )
        except CompareInputError as err:
            raise CompareInputError(f"stored battle record {number} (of {len(records)}): {err}") from None
    return battles


def load_battle_records(source: Path | PgHistory) -> list[dict[str, Any]]:
    """Every record of kind "battle" in the history (the SQLite file, or PostgreSQL: qa.export's
    `history_source`), oldest first, read-only."""
    rows = read_rows(
        source,
        """SELECT s.metadata FROM steps s JOIN threads t ON t.id = s."threadId"
                                WHERE s.metadata LIKE '%"battle"%' ORDER BY t."createdAt", s."createdAt" """,
        {},
    )
    found = [json.loads(row["metadata"] or "{}").get(RECORD_KEY) for row in rows]
    return [record for record in found if isinstance(record, dict) and record.get("kind") == "battle"]


def select(battles: list[Battle], *, tag: str | None = None, exclude_ties: bool = False) -> list[Battle]:
    """The battles a board counts: only those of `tag` if given, without ties (and both bad) if asked."""
    return [b for b in battles if (tag is None or b.tag == tag) and not (exclude_ties and b.is_tie)]
