"""vLLM's Prometheus `/metrics`, read once for everyone who needs it: the live strip and replays.

Only four plain series are read, so a regex does it (prometheus_client would be a package for 15 lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

from backend.settings import Settings

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
GENERATED = "vllm:generation_tokens_total"
KV_CACHE = "vllm:kv_cache_usage_perc"  # a fraction 0-1, despite its name
WANTED = (RUNNING, WAITING, GENERATED, KV_CACHE)


@dataclass(frozen=True)
class EngineCounts:
    """One reading of /metrics, summed over engines (data parallel servers report one series each)."""

    model: str | None
    running: float
    waiting: float
    generated: float
    kv_cache: float | None


# One sample line of the Prometheus text format: `name{label="value",...} value [timestamp]`.
SAMPLE_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
MODEL_LABEL = re.compile(r'model_name="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> EngineCounts | None:
    """The four series we show, from Prometheus text; None when none of them is there."""
    values: dict[str, list[float]] = {name: [] for name in WANTED}
    model = None
    for line in text.splitlines():
        match = SAMPLE_LINE.match(line)
        if not match or match["name"] not in values:
            continue
        try:
            values[match["name"]].append(float(match["value"]))
        except ValueError:
            continue
        label = MODEL_LABEL.search(match["labels"] or "")
        model = model or (label[1] if label else None)
    if not any(values.values()):
        return None
    kv = values[KV_CACHE]
    return EngineCounts(
        model=model,
        running=sum(values[RUNNING]),
        waiting=sum(values[WAITING]),
        generated=sum(values[GENERATED]),
        kv_cache=sum(kv) / len(kv) if kv else None,
    )


async def read_metrics(settings: Settings, *, timeout: float = 3.0) -> EngineCounts | None:
    """One reading of the server's /metrics; None when it cannot be read or holds none of our series."""
    key = settings.api_key.get_secret_value()
    try:
        async with httpx.AsyncClient(
            timeout=timeout, headers={"Authorization": f"Bearer {key}"} if key else {}
        ) as http:
            response = await http.get(f"{settings.server_url}/metrics")
    except httpx.HTTPError:
        return None
    return parse_metrics(response.text) if response.status_code == 200 else None
