"""The benchmark: vLLM direct vs through the chat page vs plain transformers, plus startup time.

    python -m backend.bench                       # 1, 4, 16 streams; direct, UI, baseline
    python -m backend.bench --concurrency 1,16,64,256 --skip-ui --skip-baseline
    python -m backend.bench --startup             # launch -> /health, eager and compiled, 1st and 2nd
    python -m backend.bench --fast-server         # the page alone: a fake GPU-fast server, 1, 4, 16, 64 sessions

It starts its own managed vLLM (and chat page) on free ports unless --url names a running server.
Prints a table, writes results/bench-<stamp>.json and .png. Ctrl-C stops everything it started.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from backend.bench import report
from backend.bench.direct import STREAMS_PER_PROCESS, run_direct
from backend.bench.fast_server import fast_server
from backend.bench.stats import StreamRecord, summarize
from backend.engine.vllm_command import build_launch, vllm_python
from backend.server.processes import free_port, free_ports
from backend.server.supervisor import VLLMServer
from backend.settings import PROJECT_ROOT, load_settings

PROMPT = "Write a short story about a robot who learns to paint. Make it vivid."


def say(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def _levels(text: str) -> list[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of whole numbers, e.g. 1,4,16"
        ) from None
    if not levels or any(c < 1 or c > 4096 for c in levels):
        raise argparse.ArgumentTypeError(f"concurrency levels must be 1-4096, got {text!r}")
    return levels


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m backend.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--concurrency",
        type=_levels,
        default=None,
        help="comma-separated stream counts (default 1,4,16; 1,4,16,64 with --fast-server)",
    )
    p.add_argument(
        "--max-tokens", type=int, default=None, help="output tokens per request (default 128; 256 with --fast-server)"
    )
    p.add_argument("--repeat", type=int, default=2, help="requests per stream, back to back (default 2)")
    p.add_argument("--skip-ui", action="store_true", help="no through-the-page run")
    p.add_argument("--skip-baseline", action="store_true", help="no transformers baseline")
    p.add_argument("--baseline-levels", type=_levels, default=None, help="levels for the baseline (default: same)")
    p.add_argument("--startup", action="store_true", help="measure start-up instead of throughput")
    p.add_argument(
        "--fast-server",
        action="store_true",
        help="stream from a fake server as fast as a GPU (backend/bench/fast_server.py) to measure "
        "the page alone; no baseline",
    )
    p.add_argument("--fast-rate", type=float, default=600.0, help="its tokens/s per stream (default 600)")
    p.add_argument("--fast-ttft", type=float, default=0.015, help="its seconds to first token (default 0.015)")
    p.add_argument("--fast-per-chunk", type=int, default=1, help="its tokens per chunk (default 1)")
    p.add_argument("--skip-browser", action="store_true", help="no real-Chromium row")
    p.add_argument("--url", default="", help="benchmark this running server instead of starting one")
    p.add_argument("--api-key", default="", help="its API key")
    p.add_argument(
        "--ui-url",
        default="",
        help="benchmark this running chat page (already pointed at the server) "
        "instead of starting one: another commit's page, several page processes",
    )
    p.add_argument(
        "--streams-per-process",
        type=int,
        default=STREAMS_PER_PROCESS,
        help=f"client streams (direct) and sessions (page) per client process (default {STREAMS_PER_PROCESS}); "
        "fewer where one client process reads slower than the server sends",
    )
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "results", help="results folder")
    p.add_argument("--label", default="", help="a note stored with the results (machine, flags)")
    args = p.parse_args(argv)
    args.concurrency = args.concurrency or ([1, 4, 16, 64] if args.fast_server else [1, 4, 16])
    if args.max_tokens is None:
        args.max_tokens = 256 if args.fast_server else 128
    args.skip_baseline = args.skip_baseline or args.fast_server
    if args.max_tokens < 1 or args.repeat < 1 or args.streams_per_process < 1:
        p.error("--max-tokens, --repeat and --streams-per-process must be at least 1")
    return args


def throughput(args: argparse.Namespace, stack: ExitStack, dtype: str) -> dict:
    vllm_port, ui_port = free_ports(2)
    settings = load_settings(vllm_port=vllm_port, ui_port=ui_port)
    if args.url:
        url, key, model = args.url.rstrip("/"), args.api_key, settings.resolved_served_name
    elif args.fast_server:
        url = stack.enter_context(
            fast_server(
                port=free_port(),
                log_dir=Path(tempfile.mkdtemp()),
                rate=args.fast_rate,
                ttft=args.fast_ttft,
                per_chunk=args.fast_per_chunk,
            )
        )
        key, model = "fast", settings.resolved_served_name
        say(f"fast server: {args.fast_rate:.0f} tok/s per stream after {args.fast_ttft * 1000:.0f} ms")
    else:
        say("starting the managed vLLM server")
        server = stack.enter_context(VLLMServer(settings, log_path=Path(tempfile.mkdtemp()) / "vllm.log"))
        url, key, model = server.url, server.api_key, settings.resolved_served_name
        say(f"vLLM healthy after {server.ready_after:.1f} s")
    results: dict = {"direct": {}, "ui": {}, "baseline": {}}
    ui_url = "" if args.skip_ui else args.ui_url.rstrip("/") or start_page(args, stack, url, key)
    if ui_url and args.ui_url:
        warm_up(ui_url)
    for c in args.concurrency:  # direct and page side by side at each level: the ratio sees the same machine load
        run_direct(url, key, model, PROMPT, concurrency=min(c, 4), repeat=1, max_tokens=16)  # warm-up
        records, wall = run_direct(
            url,
            key,
            model,
            PROMPT,
            concurrency=c,
            repeat=args.repeat,
            max_tokens=args.max_tokens,
            per_process=args.streams_per_process,
        )
        results["direct"][c] = summarize(records, wall_seconds=wall)
        say(f"direct   {c:>4} streams: {results['direct'][c]['tok_s_total']:.0f} tok/s total")
        if ui_url:
            results["ui"][c] = ui_level(ui_url, c, args.repeat, args.streams_per_process)
    if ui_url and not args.skip_browser:
        results["ui"].update(browser_row(ui_url, args.repeat))
    if not args.skip_baseline:
        results["baseline"] = baseline(args, settings, dtype)
    return results


def start_page(args: argparse.Namespace, stack: ExitStack, url: str, key: str) -> str:
    """The chat page in external mode against `url`, warmed up; its URL."""
    from backend.bench.ui_process import chainlit_app

    env = {
        "RCHAT_BASE_URL": url,
        "RCHAT_API_KEY": key,
        "RCHAT_DEFAULT_TEMPERATURE": "0",
        "RCHAT_DEFAULT_MAX_TOKENS": str(args.max_tokens),
    }
    ui_url = stack.enter_context(chainlit_app(ui_port=free_port(), log_dir=Path(tempfile.mkdtemp()), env=env))
    warm_up(ui_url)
    return ui_url


def warm_up(ui_url: str) -> None:
    from backend.bench.ui_load import run_ui

    run_ui(ui_url, PROMPT, concurrency=1, repeat=1)  # the page's first answer pays one-time costs


def ui_level(ui_url: str, c: int, repeat: int, per_process: int) -> dict:
    from backend.bench.ui_load import run_ui

    records, wall = run_ui(ui_url, PROMPT, concurrency=c, repeat=repeat, per_process=per_process)
    out = summarize(records, wall_seconds=wall)
    say(f"ui       {c:>4} streams: {out['tok_s_total']:.0f} tok/s total")
    return out


def browser_row(ui_url: str, repeat: int) -> dict:
    from backend.bench.browser_check import CHROMIUM, run_browser

    if not Path(CHROMIUM).exists():
        return {}
    started = time.monotonic()
    records = run_browser(ui_url, PROMPT, repeat=max(2, repeat))
    row = summarize(records, wall_seconds=time.monotonic() - started)
    say(f"chromium   1 tab: first text after {row['ttft_p50_ms']:.0f} ms (p50)")
    return {"chromium-1": row}


def baseline(args: argparse.Namespace, settings, dtype: str) -> dict:
    """transformers in the run's dtype (the vLLM one), so the comparison is of servers, not of number formats."""
    levels = args.baseline_levels or args.concurrency
    say(f"transformers baseline at {levels} (one request at a time)")
    proc = subprocess.run(
        [
            vllm_python(settings),
            "-m",
            "backend.bench.hf_baseline",
            settings.resolved_model,
            PROMPT,
            str(args.max_tokens),
            ",".join(map(str, levels)),
            dtype,
        ],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    raw = json.loads(proc.stdout)
    return {
        int(c): summarize([StreamRecord(**r) for r in v["records"]], wall_seconds=v["wall_s"]) for c, v in raw.items()
    }


def startup(stack: ExitStack) -> dict:
    """Launch -> /health for eager and compiled, each first (empty compile cache) and second."""
    out = {}
    cache = Path(tempfile.mkdtemp(prefix="vllm-cache-"))
    for eager in (True, False):
        for attempt in ("first", "second"):
            vllm_port, ui_port = free_ports(2)
            settings = load_settings(vllm_port=vllm_port, ui_port=ui_port, enforce_eager=eager)
            launch = build_launch(settings, api_key="bench")
            launch.env["VLLM_CACHE_ROOT"] = str(cache / ("eager" if eager else "compiled"))
            with VLLMServer(settings, launch=launch, log_path=cache / "vllm.log") as server:
                key = f"{'eager' if eager else 'compiled'}_{attempt}"
                out[key] = round(server.ready_after, 1)
                say(f"startup {key}: {out[key]} s to /health")
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    meta = report.start_run(args.label)
    if meta is None:
        return 2
    stamp = meta["date"]
    meta.update(
        max_tokens=args.max_tokens, repeat=args.repeat, prompt=PROMPT, streams_per_process=args.streams_per_process
    )
    try:
        with ExitStack() as stack:
            results = {"startup": startup(stack)} if args.startup else throughput(args, stack, meta["dtype"])
    except KeyboardInterrupt:
        say("interrupted: everything this run started has been stopped")
        return 130
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench-{stamp}.json"
    path.write_text(json.dumps({"meta": meta, **results}, indent=2))
    print(report.table(results))
    if not args.startup:
        try:
            report.chart(results, args.out / f"bench-{stamp}.png", title=args.label or meta["machine"])
        except ImportError:  # a machine with the page's packages only (the GPU box): the table and JSON suffice
            say("no chart: matplotlib is not installed")
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
