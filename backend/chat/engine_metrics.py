"""What the engine is doing right now, for the live strip, from vLLM's `/metrics` (backend/engine/metrics.py).

One `MetricsPoller` per page process reads the server every ~2 s for all sessions (not once per
browser) and hands each snapshot, or None when the server has no usable `/metrics`, to a publish
callback. Tokens/s is the growth of the generation-token counter over the last few seconds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

import httpx

from backend.engine.metrics import parse_metrics
from backend.settings import Settings

log = logging.getLogger(__name__)


class _WithoutMetricsPolls(logging.Filter):
    """httpx logs every request at INFO: a /metrics read every 2 s would bury the page's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "/metrics" not in record.getMessage()


QUIET = _WithoutMetricsPolls()

NO_METRICS_RETRY = 30.0  # a server without /metrics (some external ones): ask again now and then, not every 2 s


@dataclass(frozen=True)
class EngineSnapshot:
    """The strip's numbers. tokens_per_second is None until there are two samples to compare."""

    model: str
    running: int
    waiting: int
    tokens_per_second: float | None
    kv_cache_percent: float | None

    def as_dict(self) -> dict:
        return asdict(self)


class TokenRate:
    """Tokens/s over a sliding window of (time, counter) samples; a counter that drops (restart) starts over."""

    def __init__(self, window: float = 6.0) -> None:
        self.window = window
        self.samples: deque[tuple[float, float]] = deque()

    def add(self, now: float, total: float) -> float | None:
        if self.samples and total < self.samples[-1][1]:
            self.samples.clear()
        self.samples.append((now, total))
        # Keep one sample at or beyond the window's edge, so the rate always spans the whole window.
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()
        (t0, c0), (t1, c1) = self.samples[0], self.samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else None


class MetricsPoller:
    """Reads /metrics every `every` seconds and publishes a snapshot (None = nothing to show)."""

    def __init__(
        self,
        settings: Settings,
        *,
        publish: Callable[[EngineSnapshot | None], Awaitable[None]],
        every: float = 2.0,
        window: float = 6.0,
    ) -> None:
        self.settings = settings
        self.publish = publish
        logging.getLogger("httpx").addFilter(QUIET)  # once per logger: a filter added twice is kept once
        self.every = every
        self.rate = TokenRate(window)
        self.last: EngineSnapshot | None = None
        key = settings.api_key.get_secret_value()
        self.http = httpx.AsyncClient(timeout=5.0, headers={"Authorization": f"Bearer {key}"} if key else {})

    async def read(self) -> tuple[EngineSnapshot | None, float]:
        """One reading and how long to wait before the next."""
        try:
            response = await self.http.get(f"{self.settings.server_url}/metrics")
        except httpx.TimeoutException:
            return self.last, self.every  # a busy server answers late: keep the last numbers up, not a blink
        except httpx.HTTPError:
            return None, self.every  # down or restarting: the page's own notices say so; keep trying
        counts = parse_metrics(response.text) if response.status_code == 200 else None
        if counts is None:
            return None, NO_METRICS_RETRY
        return EngineSnapshot(
            model=counts.model or self.settings.resolved_served_name,
            running=int(counts.running),
            waiting=int(counts.waiting),
            tokens_per_second=self.rate.add(time.monotonic(), counts.generated),
            kv_cache_percent=None if counts.kv_cache is None else round(100 * counts.kv_cache, 1),
        ), self.every

    async def run(self) -> None:
        """Poll and publish until cancelled; a failing publish or a bad reading never ends the loop."""
        try:
            while True:
                try:
                    snapshot, wait = await self.read()
                except Exception:  # e.g. unparsable text: log it, hide the strip, go on
                    log.exception("reading %s/metrics failed", self.settings.server_url)
                    snapshot, wait = None, NO_METRICS_RETRY
                self.last = snapshot
                try:
                    await self.publish(snapshot)
                except Exception:
                    log.exception("publishing engine metrics failed")
                await asyncio.sleep(wait)
        finally:
            await self.http.aclose()
