"""The benchmark's table (terminal, Markdown) and chart (PNG); what every bench run starts with."""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from backend.engine.cpu_host import read_host
from backend.engine.vllm_command import effective_dtype, read_host_choice, resolve_device
from backend.settings import SettingsError, load_settings


def start_run(label: str) -> dict | None:
    """The run's stamp and machine, or None (after saying why) when the user's settings are bad."""
    try:
        settings = load_settings()
    except SettingsError as err:
        print(f"error: {err}", file=sys.stderr)
        return None
    device = resolve_device(settings)
    host = read_host_choice(settings) if device == "cpu" else None
    _flags, cpu_model, cpus = read_host()
    return {
        "date": datetime.now(UTC).strftime("%Y%m%d-%H%M%S"),
        "machine": f"{platform.node()} {platform.machine()}",
        "cpu": f"{cpu_model}, {len(cpus)} cores",
        "label": label,
        "device": device,
        "dtype": effective_dtype(settings, device, host) or "auto",
    }  # auto: the model's own


def _fmt(value, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _percent(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.1f} %"


def table(results: dict) -> str:
    """A Markdown table: one row per mode and concurrency, plus UI/direct ratios."""
    if "startup" in results:
        rows = ["| start | seconds to /health |", "|---|---|"]
        rows += [f"| {k.replace('_', ', ')} | {v} |" for k, v in results["startup"].items()]
        return "\n".join(rows)
    rows = [
        "| mode | streams | tok/s total | tok/s per stream | TTFT p50 ms | TTFT p95 ms | ITL p50 ms | ITL p95 ms | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in ("direct", "ui", "baseline"):
        for c, s in sorted(results.get(mode, {}).items(), key=lambda kv: _order(kv[0])):
            rows.append(
                f"| {mode} | {c} | {_fmt(s['tok_s_total'])} | {_fmt(s['tok_s_per_stream'], 1)} | "
                f"{_fmt(s['ttft_p50_ms'])} | {_fmt(s['ttft_p95_ms'])} | {_fmt(s['itl_p50_ms'], 1)} | "
                f"{_fmt(s['itl_p95_ms'], 1)} | {s['errors']} |"
            )
    ratios = ui_overhead(results)
    if ratios:
        rows += [
            "",
            "| streams | UI / direct throughput | first-token delay added by the UI (p50 ms) |",
            "|---|---|---|",
        ]
        rows += [f"| {c} | {_percent(r['ratio'])} | {_fmt(r['added_ttft_ms'])} |" for c, r in ratios.items()]
    baseline = results.get("baseline", {})
    if baseline:
        rows += ["", "| streams | vLLM direct / transformers throughput |", "|---|---|"]
        for c, b in sorted(baseline.items(), key=lambda kv: _order(kv[0])):
            d = results["direct"].get(c)
            if d and b["tok_s_total"]:
                rows.append(f"| {c} | {d['tok_s_total'] / b['tok_s_total']:.1f}x |")
    return "\n".join(rows)


def _order(level) -> tuple[int, str]:
    """Numeric levels in order; named extra rows (e.g. "chromium-1") after them."""
    text = str(level)
    return (int(text), "") if text.isdigit() else (10**9, text)


def ui_overhead(results: dict) -> dict:
    out = {}
    for c, ui in results.get("ui", {}).items():
        level = int(str(c).rsplit("-", 1)[-1])  # "chromium-1" compares with 1 direct stream
        direct = results["direct"].get(level) or results["direct"].get(str(level))
        if direct and direct["tok_s_total"] and ui["tok_s_total"] is not None:
            added = None
            if ui["ttft_p50_ms"] is not None and direct["ttft_p50_ms"] is not None:
                added = ui["ttft_p50_ms"] - direct["ttft_p50_ms"]
            # A named row (the Chromium tab) reloads the page between questions: no throughput ratio.
            ratio = ui["tok_s_total"] / direct["tok_s_total"] if str(c).isdigit() else None
            out[c] = {"ratio": ratio, "added_ttft_ms": added}
    return out


def chart(results: dict, path: Path, *, title: str) -> None:
    """tokens/s and TTFT p50 against concurrency, one line per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, style in (("direct", "o-"), ("ui", "s--"), ("baseline", "^:")):
        data = results.get(mode) or {}
        if not data:
            continue
        levels = sorted(int(c) for c in data if str(c).isdigit())
        left.plot(levels, [data[_key(data, c)]["tok_s_total"] for c in levels], style, label=mode)
        right.plot(levels, [data[_key(data, c)]["ttft_p50_ms"] for c in levels], style, label=mode)
    for ax, label in ((left, "output tokens/s (total)"), (right, "time to first token, p50 (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent streams")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    right.set_yscale("log")  # the queued baseline's first tokens are seconds, vLLM's milliseconds
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _key(data: dict, c: int):
    return c if c in data else str(c)
