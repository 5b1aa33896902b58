"""Replay a stored answer from its stamp: send the same request again and compare the answers.

The match is `identical`, `different`, or `not comparable` with the reasons: the engine is not the
one that answered (another model files hash, dtype, vLLM version, max model length, flags, CPU), the
answer was sampled without a seed, or it never completed. What could not be checked (facts unknown
on one side, other requests running at the same time) is listed as caveats: a replay can then still
come out identical or different, but the caveats say how far to trust it.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import openai

from backend.answers.request import AnswerRequest
from backend.answers.stream import stream_answer
from backend.engine.facts import engine_facts
from backend.engine.metrics import read_metrics
from backend.errors import ChatAppError
from backend.qa.export import load_records
from backend.qa.history_pg import PgHistory
from backend.settings import Settings

# Engine facts that change tokens, in the order reasons are given, with the words for them.
COMPARED = (
    ("model_hash", "model files (hash)"),
    ("dtype", "dtype"),
    ("vllm_version", "vLLM version"),
    ("max_model_len", "max model len"),
    ("served_max_model_len", "max model len the server reports"),
    ("quantization", "quantization"),
    ("enforce_eager", "enforce-eager"),
    ("enable_prefix_caching", "prefix caching"),
    ("enable_chunked_prefill", "chunked prefill"),
    ("device", "device"),
    ("cpu", "CPU"),
    ("cpu_flags", "CPU features"),
)
HALF_DTYPES = ("bfloat16", "float16")  # 8 or 11 bits of mantissa: a reordered sum can flip a draw
# Flags already compared by name above; the rest of the command line is compared as a whole.
NAMED_FLAGS = (
    "--dtype",
    "--max-model-len",
    "--quantization",
    "--enforce-eager",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enable-chunked-prefill",
    "--no-enable-chunked-prefill",
)


class NotReplayable(ChatAppError):
    """The answer cannot be sent again: not found, or stored before requests were stamped."""


@dataclass
class Replay:
    answer_id: str
    match: str  # identical | different | not comparable
    reasons: list[str] = field(default_factory=list)  # why not comparable
    caveats: list[str] = field(default_factory=list)  # what could not be checked
    stored_answer: str = ""
    stored_reasoning: str = ""
    new_answer: str = ""
    new_reasoning: str = ""
    new_finish_reason: str | None = None
    stored_tokens: int | None = None
    new_tokens: int | None = None
    request: dict[str, Any] = field(default_factory=dict)
    engine_now: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """As `backend replay --json` prints it and the page stores it: the match under the key "verdict"
        (the key stays for the replays already stored and the scripts that read them)."""
        fields = asdict(self)
        return {"answer_id": fields.pop("answer_id"), "verdict": fields.pop("match"), **fields}


def find_record(source: Path | PgHistory, answer_id: str, *, thread_id: str | None = None) -> dict[str, Any]:
    """The stored answer with this id (the answer message's id, `answer_id` in exports)."""
    for record in load_records(source, thread_id=thread_id):
        if record["answer_id"] == answer_id:
            return record
    raise NotReplayable(
        f"No stored answer with id {answer_id} in {source}. The ids are the "
        "`answer_id` fields of `python -m backend export`."
    )


def replay_request(stamp: dict[str, Any], *, model: str) -> dict[str, Any]:
    """The stamped request, ready to send to `model` (the name the server serves it under now)."""
    stamped = stamp.get("request") or {}
    if not stamped.get("messages"):
        raise NotReplayable(
            "This answer was stored before requests were stamped: its stamp lacks the "
            "messages that were sent, so it cannot be replayed. Ask the question again."
        )
    return {
        "model": model,
        "messages": stamped["messages"],
        **stamped.get("params", {}),
        "extra_body": stamped.get("extra_body") or {},
    }


def engine_differences(stamped: dict[str, Any], now: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(reasons the engines are not the same, facts that could not be checked)."""
    reasons, unknown = [], []
    for key, words in COMPARED:
        before, after = stamped.get(key), now.get(key)
        if not _known(stamped, key) or not _known(now, key):
            if _known(stamped, key) or _known(now, key) or key not in ("cpu", "cpu_flags"):
                unknown.append(words)  # (no CPU facts on either side: a GPU, or an external server)
        elif before != after:
            reasons.append(f"{words}: {_short(before)} in the stamp, {_short(after)} now")
    before_flags, after_flags = _other_flags(stamped.get("flags")), _other_flags(now.get("flags"))
    if before_flags is not None and after_flags is not None and before_flags != after_flags:
        reasons.append(
            f"vLLM flags: {' '.join(before_flags) or 'none'} in the stamp, {' '.join(after_flags) or 'none'} now"
        )
    caveats = [f"not known on both sides, so not checked: {', '.join(unknown)}"] if unknown else []
    for side, facts in (("the stamp's", stamped), ("today's", now)):
        if facts.get("source") == "settings":
            caveats.append(f"{side} engine facts come from the app's settings, not from the launcher that started vLLM")
    if stamped.get("env") and now.get("env") and stamped["env"] != now["env"]:
        caveats.append(
            "the server's environment differs: "
            + ", ".join(sorted(k for k in {*stamped["env"], *now["env"]} if stamped["env"].get(k) != now["env"].get(k)))
        )
    return reasons, caveats


def _known(facts: dict[str, Any], key: str) -> bool:
    """None is a fact (no quantization, vLLM's default); a missing key or 'unknown' is not."""
    return key in facts and key not in facts.get("unknown", ()) and facts[key] != "unknown"


def _other_flags(flags: list[str] | None) -> list[str] | None:
    if flags is None:
        return None
    out, skip = [], False
    for i, part in enumerate(flags):
        if skip:
            skip = False
            continue
        if part.split("=", 1)[0] in NAMED_FLAGS:
            skip = "=" not in part and i + 1 < len(flags) and not flags[i + 1].startswith("--")
            continue
        out.append(part)
    return out


def _short(value: Any) -> str:
    text = str(value)
    return text[:19] + "…" if text.startswith("sha256:") else text


def answer_differences(record: dict[str, Any], request: dict[str, Any]) -> list[str]:
    """Reasons a stored answer cannot be expected to come out the same, whatever the engine."""
    reasons = []
    if record.get("outcome") != "complete":
        reasons.append(f"the stored answer did not complete (outcome: {record.get('outcome')})")
    temperature = request.get("temperature", (record["stamp"].get("sampling") or {}).get("temperature"))
    if request.get("seed") is None and temperature not in (0, 0.0):
        reasons.append(
            f"it was sampled (temperature {temperature}) without a seed, so another sample is expected to differ"
        )
    return reasons


async def requests_running(settings: Settings) -> int | None:
    """How many requests the server is decoding now (vLLM's /metrics), None if it does not say."""
    counts = await read_metrics(settings)
    return None if counts is None else int(counts.running)


async def replay(record: dict[str, Any], *, settings: Settings, client: openai.AsyncOpenAI) -> Replay:
    """Send the stored answer's request again and compare (raises NotReplayable, or our backend errors)."""
    stamp = record.get("stamp") or {}
    request = replay_request(stamp, model=settings.resolved_served_name)
    now = await engine_facts(settings)
    result = await _prepared(record, stamp, request, now, settings)
    asked = AnswerRequest(
        body=request,
        engine=now,
        question=record.get("question", ""),
        question_id=record.get("question_id", ""),
        starts_in_reasoning=settings.reasoning_starts_inside and bool(stamp.get("thinking")),
    )
    again = await stream_answer(client, settings, asked)
    if again.failure is not None:
        raise again.failure
    if again.outcome == "stopped":
        raise asyncio.CancelledError
    result.new_answer, result.new_reasoning = again.answer, again.reasoning
    result.new_finish_reason, result.new_tokens = again.finish_reason, again.stats.completion_tokens
    if not result.reasons:
        same = (result.new_answer, result.new_reasoning) == (result.stored_answer, result.stored_reasoning)
        result.match = "identical" if same else "different"
    if result.match == "different" and now.get("dtype") in HALF_DTYPES:
        result.caveats.append(
            f"the engine computes in {now['dtype']}, where a batch alone changed every seeded replay "
            "we measured (float32: none); if the stored answer or this replay ran beside other "
            "requests, that may be the whole difference (docs/reproducibility.md)"
        )
    return result


async def _prepared(
    record: dict[str, Any], stamp: dict[str, Any], request: dict[str, Any], now: dict[str, Any], settings: Settings
) -> Replay:
    """The replay before it runs: why it may not be comparable, and what could not be checked."""
    reasons, caveats = engine_differences(stamp.get("engine") or {}, now)
    if not stamp.get("engine"):
        reasons.insert(0, "the stamp has no engine facts (stored before engines were stamped)")
    reasons += answer_differences(record, request)
    if busy := await requests_running(settings):
        caveats.append(
            f"{busy} other request(s) were running on the server when the replay started; "
            "batching can change floating-point order (see docs/reproducibility.md)"
        )
    return Replay(
        answer_id=record["answer_id"],
        match="not comparable",
        reasons=reasons,
        caveats=caveats,
        stored_answer=record.get("answer", ""),
        stored_reasoning=record.get("reasoning", ""),
        stored_tokens=(stamp.get("stats") or {}).get("completion_tokens"),
        request=request,
        engine_now=now,
    )
