"""Statistics of recorded streams: percentiles, time to first token, time between tokens, tokens/s.

Pure functions over recorded timings, so tests can check the arithmetic on known numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import pairwise


@dataclass
class StreamRecord:
    """One stream as a client saw it: when it was sent, when each token (or batch) arrived, how many tokens."""

    sent_at: float
    arrivals: list[float] = field(default_factory=list)
    tokens: int = 0  # output tokens (from usage, or the count of token events)
    error: str = ""

    @property
    def ttft(self) -> float | None:
        return self.arrivals[0] - self.sent_at if self.arrivals else None

    @property
    def gaps(self) -> list[float]:
        return [b - a for a, b in pairwise(self.arrivals)]

    @property
    def tokens_per_second(self) -> float | None:
        """Decode rate of this stream: tokens after the first, over the time after the first."""
        if len(self.arrivals) < 2 or self.tokens < 2:
            return None
        span = self.arrivals[-1] - self.arrivals[0]
        return (self.tokens - 1) / span if span > 0 else None


def percentile(values: list[float], p: float) -> float | None:
    """Linear-interpolated percentile (p in 0..100), as numpy's default; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(records: list[StreamRecord], *, wall_seconds: float) -> dict[str, float | int | None]:
    """The numbers of one run at one concurrency."""
    ok = [r for r in records if not r.error and r.arrivals]
    ttfts = [r.ttft for r in ok if r.ttft is not None]
    gaps = [g for r in ok for g in r.gaps]
    rates = [r.tokens_per_second for r in ok if r.tokens_per_second]
    tokens = sum(r.tokens for r in ok)
    return {
        "streams": len(records),
        "errors": len(records) - len(ok),
        "output_tokens": tokens,
        "ttft_p50_ms": _ms(percentile(ttfts, 50)),
        "ttft_p95_ms": _ms(percentile(ttfts, 95)),
        "itl_p50_ms": _ms(percentile(gaps, 50)),
        "itl_p95_ms": _ms(percentile(gaps, 95)),
        "tok_s_per_stream": percentile(rates, 50),
        "tok_s_total": tokens / wall_seconds if wall_seconds > 0 else None,
        "wall_s": wall_seconds,
        "error_samples": sorted({r.error or "no tokens" for r in records if r not in ok})[
            :3
        ],  # what went wrong, in words
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000
