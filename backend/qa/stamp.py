"""The reproducibility stamp stored with every answer: what produced it, exactly.

Served name and model path, the vLLM version the server reports at /version, the sampling that was
in effect (what we sent, plus the model's generation_config.json defaults that vLLM applies to
whatever we did not send), seed, thinking, system prompt, timestamps and stats, and this app's
commit. Exports add the human verdict given since.
"""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from functools import cache
from typing import Any

import httpx

from backend.model_info import generation_config
from backend.settings import PROJECT_ROOT, Settings

MONOTONIC = ("started", "first_token_at", "reasoning_started", "reasoning_ended", "ended")  # meaningless later
_versions: dict[str, str] = {}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@cache
def app_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


async def server_version(settings: Settings) -> str:
    """vLLM's version from /version, asked once per server URL (a restart keeps the same build)."""
    url = settings.server_url
    if url not in _versions:
        try:
            async with httpx.AsyncClient(timeout=3) as http:
                _versions[url] = (await http.get(f"{url}/version")).json().get("version", "unknown")
        except (httpx.HTTPError, ValueError, AttributeError):
            return "unknown"  # not cached: ask again next time
    return _versions[url]


def make_stamp(*, settings: Settings, request: dict[str, Any], vllm_version: str, started_at: str,
               finished_at: str, stats: dict[str, Any], context_messages: int) -> dict[str, Any]:
    sent = {k: v for k, v in request.items() if k not in ("messages", "model", "extra_body", "stream",
                                                          "stream_options")}
    kwargs = (request.get("extra_body") or {}).get("chat_template_kwargs", {})
    model_defaults = generation_config(settings.resolved_model)
    system = next((m["content"] for m in request.get("messages", []) if m["role"] == "system"), "")
    return {
        "served_model": settings.resolved_served_name,
        "model_path": settings.resolved_model,
        "vllm_version": vllm_version,
        "server_url": settings.server_url,
        "sampling": {**{k: v for k, v in model_defaults.items() if k != "max_new_tokens"}, **sent},
        "model_generation_config": model_defaults,
        "seed": request.get("seed"),
        "thinking": kwargs.get("enable_thinking"),
        "system_prompt": system,
        "context_messages": context_messages,
        "started_at": started_at,
        "finished_at": finished_at,
        "stats": {k: v for k, v in stats.items() if k not in MONOTONIC},
        "app_commit": app_commit(),
    }
