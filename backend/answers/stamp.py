"""The reproducibility stamp stored with every answer: what produced it, exactly.

Served name and model path, the vLLM version the server reports at /version, the sampling that was
in effect (what we sent, plus the model's generation_config.json defaults that vLLM applies to
whatever we did not send), the seed and whether the user set it or the app drew it, thinking,
system prompt, the request exactly as sent (messages included, so it can be replayed: see
backend/qa/replay.py), the engine (backend/engine/facts.py: dtype, flags, model files hash...),
timestamps and stats, and this app's commit. Exports add the human verdict given since.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from functools import cache
from typing import Any

from backend.model_info import generation_config
from backend.settings import PROJECT_ROOT, Settings

NOT_SAMPLING = ("messages", "model", "extra_body", "extra_headers", "stream", "stream_options")
MONOTONIC = ("started", "first_token_at", "reasoning_started", "reasoning_ended", "ended")  # meaningless later


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@cache
def app_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def make_stamp(
    *,
    settings: Settings,
    request: dict[str, Any],
    started_at: str,
    finished_at: str,
    stats: dict[str, Any],
    context_messages: int,
    engine: dict[str, Any],
    seed_source: str | None = None,
) -> dict[str, Any]:
    """The stamp of one answer. `request` is exactly what was sent; it is kept whole for a replay."""
    sent = {k: v for k, v in request.items() if k not in NOT_SAMPLING}
    extra_body = request.get("extra_body") or {}
    model_defaults = generation_config(settings.resolved_model)
    system = next((m["content"] for m in request.get("messages", []) if m["role"] == "system"), "")
    return {
        "served_model": settings.resolved_served_name,
        "model_path": settings.resolved_model,
        "vllm_version": engine.get("vllm_version", "unknown"),
        "server_url": settings.server_url,
        "sampling": {**{k: v for k, v in model_defaults.items() if k != "max_new_tokens"}, **sent},
        "model_generation_config": model_defaults,
        "seed": request.get("seed"),
        "seed_source": seed_source,  # "user" (set in the panel) or "drawn" (by the app, for this answer)
        "thinking": extra_body.get("chat_template_kwargs", {}).get("enable_thinking"),
        "thinking_budget": extra_body.get("thinking_token_budget"),
        "reasoning_effort": request.get("reasoning_effort"),
        "system_prompt": system,
        "context_messages": context_messages,
        "request": {"messages": request.get("messages", []), "params": sent, "extra_body": extra_body},
        "engine": engine,
        "started_at": started_at,
        "finished_at": finished_at,
        "stats": {k: v for k, v in stats.items() if k not in MONOTONIC},
        "app_commit": app_commit(),
    }
