"""A replay in words: plain text for `python -m backend replay`, Markdown for the chat page.

When the answers differ, a word diff in `git diff --word-diff` notation ([-stored-]{+replay+}) shows
where, and the first line says how far they agreed (sampling diverges at one token, then goes its
own way, so the first difference is what matters).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import sqlite3
import sys
from typing import Any

from backend.chat.client import make_client
from backend.errors import BackendRejected, ChatAppError
from backend.qa.export import history_source
from backend.qa.replay import Replay, find_record, replay
from backend.settings import Settings

MATCH_WORDS = {"identical": "identical", "different": "DIFFERENT", "not comparable": "NOT COMPARABLE"}


def held_fixed(replay: Replay) -> str:
    """What the replay sent and ran on, in one line: seed, temperature, model hash, dtype, version."""
    req, now = replay.request, replay.engine_now
    parts = [
        f"seed {req.get('seed')}" if req.get("seed") is not None else "no seed",
        f"temperature {req.get('temperature')}",
        f"max tokens {req.get('max_tokens')}",
    ]
    if now.get("model_hash"):
        parts.append(f"model {str(now['model_hash'])[:19]}…")
    for key, label in (("dtype", "dtype"), ("vllm_version", "vLLM")):
        if now.get(key) not in (None, "unknown"):
            parts.append(f"{label} {now[key]}")
    return ", ".join(parts)


def word_diff(before: str, after: str) -> tuple[int, str]:
    """(words in common before the first difference, the texts as one word diff)."""
    a, b = re.findall(r"\S+|\s+", before), re.findall(r"\S+|\s+", after)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    out: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append("".join(a[i1:i2]))
            continue
        if i2 > i1:
            out.append(f"[-{''.join(a[i1:i2])}-]")
        if j2 > j1:
            out.append(f"{{+{''.join(b[j1:j2])}+}}")
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return len([w for w in a[:common] if not w.isspace()]), "".join(out)


def _tokens(count: Any) -> str:
    return f"{count} tokens" if count is not None else "tokens unknown"


def render_text(replay: Replay) -> str:
    lines = [f"Replay of answer {replay.answer_id}: {MATCH_WORDS[replay.match]}", f"  ({held_fixed(replay)})"]
    lines += [f"  not comparable: {reason}" for reason in replay.reasons]
    lines += [f"  caveat: {caveat}" for caveat in replay.caveats]
    for label, answer, reasoning, count in (
        ("stored", replay.stored_answer, replay.stored_reasoning, replay.stored_tokens),
        ("replay", replay.new_answer, replay.new_reasoning, replay.new_tokens),
    ):
        lines += ["", f"--- {label} answer ({_tokens(count)})"]
        if reasoning:
            lines += ["[reasoning]", reasoning.strip(), "[answer]"]
        lines.append(answer.strip() or "(no answer text)")
    if replay.new_answer != replay.stored_answer:
        common, diff = word_diff(replay.stored_answer, replay.new_answer)
        lines += ["", f"--- word diff (the first {common} words agree; [-stored-] {{+replay+}})", diff]
    if replay.new_reasoning != replay.stored_reasoning:
        common, diff = word_diff(replay.stored_reasoning, replay.new_reasoning)
        lines += ["", f"--- reasoning word diff (the first {common} words agree)", diff]
    return "\n".join(lines) + "\n"


def _fenced(text: str) -> str:
    """Text shown exactly as the model wrote it: a code fence longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.strip() or '(no answer text)'}\n{fence}"


def render_markdown(replay: Replay) -> str:
    """The replay as a message under the answer: the match first, then the replay, then what differs."""
    lines = [f"**Replay: {MATCH_WORDS[replay.match]}** · {held_fixed(replay)}"]
    lines += [f"- not comparable: {reason}" for reason in replay.reasons]
    lines += [f"- caveat: {caveat}" for caveat in replay.caveats]
    if replay.match == "identical":
        lines += ["", f"The replay ({_tokens(replay.new_tokens)}) is word for word the stored answer above."]
        return "\n".join(lines)
    lines += [
        "",
        f"**Replay** ({_tokens(replay.new_tokens)}; stored: {_tokens(replay.stored_tokens)})",
        _fenced(replay.new_answer),
    ]
    if replay.new_answer != replay.stored_answer:
        common, diff = word_diff(replay.stored_answer, replay.new_answer)
        lines += ["", f"**Where they differ** (the first {common} words agree; [-stored-] {{+replay+}})", _fenced(diff)]
    if replay.new_reasoning != replay.stored_reasoning:
        common, _ = word_diff(replay.stored_reasoning, replay.new_reasoning)
        lines += ["", f"The reasoning differs too (the first {common} words agree)."]
    return "\n".join(lines)


async def _replay_closing(record: dict[str, Any], settings: Settings) -> Replay:
    client = make_client(settings, api_key=settings.api_key.get_secret_value())
    try:
        return await replay(record, settings=settings, client=client)
    finally:
        await client.close()  # its aiohttp session belongs to this loop: closed here, not warned about at exit


def replay_command(settings: Settings, answer_id: str, *, as_json: bool = False) -> int:
    """`python -m backend replay ANSWER_ID`: 0 identical, 1 different or not comparable, 2 could not replay."""
    try:
        record = find_record(history_source(settings), answer_id)
        result = asyncio.run(_replay_closing(record, settings))
    except (ChatAppError, sqlite3.Error) as err:
        hint = ""
        if isinstance(err, BackendRejected) and not settings.api_key.get_secret_value():
            hint = (
                " RCHAT_API_KEY is not set and no app running under these settings (./start_service.sh) "
                "left its key: set RCHAT_API_KEY to the server's key, or use the Replay button."
            )
        print(f"error: {err}{hint}", file=sys.stderr)
        return 2
    print(json.dumps(result.as_dict(), ensure_ascii=False, indent=2) if as_json else render_text(result))
    return 0 if result.match == "identical" else 1
