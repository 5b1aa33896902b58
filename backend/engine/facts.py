"""The engine part of a stamp: what is serving the model right now, as far as we can know it.

Managed mode: the facts the launcher published when it started vLLM (backend/engine/launch_facts.py).
Without a running launcher (vLLM started by `python -m backend start` under other settings, or by a
test), the same facts derived from this app's settings, marked `source: "settings"`. External mode:
only what the server reports at /version and /v1/models; everything else is listed under `unknown`.
Every mode adds what the server itself reports (version, served max model length).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import httpx

from backend.engine.launch_facts import launch_facts
from backend.engine.vllm_command import build_launch
from backend.server_status import read_status
from backend.settings import Settings

# The facts a launch gives that an external server does not report.
LAUNCH_ONLY = (
    "device",
    "dtype",
    "quantization",
    "enforce_eager",
    "enable_prefix_caching",
    "enable_chunked_prefill",
    "flags",
    "model_hash",
)
REFRESH_AFTER = 30.0  # seconds a server's own report (/version, /v1/models) is trusted before asking again


class FactsCache:
    """The engine facts of a page process's stamps (backend/page/services.py), cached per server. The
    server's report is asked again after REFRESH_AFTER seconds or when the launcher's status changes,
    so a server upgraded or restarted behind the same URL is stamped as it is now."""

    def __init__(self) -> None:
        self.reported: dict[str, tuple[float, tuple[Any, ...], dict[str, Any]]] = {}  # url -> (when, status, facts)
        self.derived: dict[str, dict[str, Any]] = {}

    async def facts(self, settings: Settings) -> dict[str, Any]:
        """The engine facts for an answer's stamp (see the module docstring for where each comes from)."""
        reported = await self.reports(settings)
        if settings.external:
            local: dict[str, Any] = {"source": "server", "unknown": list(LAUNCH_ONLY)}
        else:
            local = _published(settings) or await self._from_settings(settings)
        return {**local, **{k: v for k, v in reported.items() if v is not None}}

    async def reports(self, settings: Settings) -> dict[str, Any]:
        url, status = settings.server_url, _status_key(settings)
        if (cached := self.reported.get(url)) and cached[1] == status and time.monotonic() - cached[0] < REFRESH_AFTER:
            return cached[2]
        facts, complete = await server_reports(settings)
        if complete:  # a failed ask is not kept, so the next answer asks again
            self.reported[url] = (time.monotonic(), status, facts)
        return facts

    async def _from_settings(self, settings: Settings) -> dict[str, Any]:
        """What these settings would launch: assumed to be what runs (no launcher said otherwise)."""
        if settings.server_url not in self.derived:
            spec = build_launch(settings, api_key="")
            facts = await asyncio.to_thread(launch_facts, spec, model_path=settings.resolved_model)
            self.derived[settings.server_url] = {"source": "settings", **facts}
        return self.derived[settings.server_url]


async def engine_facts(settings: Settings, cache: FactsCache | None = None) -> dict[str, Any]:
    """The engine facts for a stamp: through the page's cache, or (a command line) asked afresh."""
    return await (cache or FactsCache()).facts(settings)


def _status_key(settings: Settings) -> tuple[Any, ...]:
    status = read_status(settings.status_file)
    return (status.pid, status.since, status.state) if status else ()


def _published(settings: Settings) -> dict[str, Any] | None:
    """The launcher's facts, if a live launcher serving this page published them."""
    status = read_status(settings.status_file)
    if status is None or not status.engine or status.state not in ("ready", "restarting", "starting"):
        return None
    try:
        os.kill(status.pid, 0)  # a status left by a launcher that is gone says nothing about now
    except (ProcessLookupError, PermissionError, ValueError):
        return None
    return {"source": "launcher", **status.engine}


async def server_reports(settings: Settings) -> tuple[dict[str, Any], bool]:
    """vLLM's version (/version) and the served model's max_model_len and root (/v1/models), and
    whether the server answered both."""
    url = settings.server_url
    facts: dict[str, Any] = {"vllm_version": "unknown", "served_max_model_len": None, "served_root": None}
    headers = {"Authorization": f"Bearer {settings.api_key.get_secret_value() or 'none'}"}
    try:
        async with httpx.AsyncClient(timeout=3, headers=headers) as http:
            facts["vllm_version"] = (await http.get(f"{url}/version")).json().get("version", "unknown")
            models = (await http.get(f"{url}/v1/models")).json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return facts, False
    served = next((m for m in models if m.get("id") == settings.resolved_served_name), models[0] if models else {})
    facts["served_max_model_len"] = served.get("max_model_len")
    facts["served_root"] = served.get("root")
    return facts, True
