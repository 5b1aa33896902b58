"""CPU server variants side by side in one run: dtype, thread binding, preloads; speed and right answers.

    python -m backend.bench.cpu_variants                          # today, bind, preload, defaults, bf16
    python -m backend.bench.cpu_variants --variants today,defaults --concurrency 1,4,16

Each variant starts its own vLLM (one at a time), asks the self-test's known-answer question (so a
fast variant that answers wrong shows as such), then streams at each concurrency. The transformers
baseline runs once, at one stream, in the defaults' dtype. The machine's load average is recorded
next to each variant: compare variants within one run only. Prints a table, writes
results/cpu-variants-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from backend.bench.__main__ import PROMPT, _levels, baseline
from backend.bench.direct import run_direct
from backend.bench.stats import summarize
from backend.engine import cpu_host
from backend.engine.vllm_command import LaunchSpec, build_argv, build_env, build_launch, vllm_python
from backend.server import self_test
from backend.server.processes import free_ports
from backend.server.supervisor import VLLMServer
from backend.settings import PROJECT_ROOT, Settings, load_settings


def _spec(settings: Settings, dtype: str, env: dict[str, str]) -> LaunchSpec:
    host = cpu_host.HostChoice(dtype=dtype, reason="benchmark variant", env=env)
    return LaunchSpec(
        argv=build_argv(settings, device="cpu", host=host),
        env=build_env(settings, api_key=settings.api_key.get_secret_value(), host=host),
        device="cpu",
        dtype=dtype,
    )


def _host_parts(settings: Settings) -> tuple[dict[str, str], dict[str, str]]:
    _flags, _model, cpus = cpu_host.read_host()
    return cpu_host.thread_env(cpus), cpu_host.preload_env(
        cpu_host.find_preloads(vllm_python(settings), intel_openmp=True)
    )


def _defaults_with(settings: Settings, **update) -> LaunchSpec:
    """The defaults' launch (what the host picks) with some settings changed."""
    return build_launch(settings.model_copy(update=update), api_key=settings.api_key.get_secret_value())


def variants(settings: Settings) -> dict[str, Callable[[], LaunchSpec]]:
    """Named launches: `today` is main before host detection (float32, one core reserved, no preloads);
    `bind` computes on every core, `preload` adds tcmalloc and Intel OpenMP, `bf16`/`fp16` both;
    `bf16-capped` is bf16 with oneDNN kept off AMX on any host (the AMX default until 2026-12-06);
    `fp16-lean`/`bf16-lean` are float16/bfloat16 with vLLM's own threads and tcmalloc only (on AMX,
    bf16-lean leaves oneDNN its AMX kernels: RCHAT_ONEDNN_AMX=true); `defaults-chunked` is the
    defaults with chunked prefill back on (what turning it off for drawn seeds costs);
    `all-cores`/`vllm-layout` are the defaults with RCHAT_CPU_ALL_CORES true/false (every core bound
    with Intel OpenMP that does not spin / vLLM's own threads, one core kept for its API server);
    `defaults-eager` is the defaults with --enforce-eager (the CPU default until 2026-12-06; `defaults`
    is compiled with torch.compile where the host has a C++ compiler)."""
    bind, preload = _host_parts(settings)
    lean = cpu_host.preload_env(cpu_host.find_preloads(vllm_python(settings)))  # tcmalloc only
    return {
        "today": lambda: _spec(settings, "float32", {}),
        "bind": lambda: _spec(settings, "float32", bind),
        "preload": lambda: _spec(settings, "float32", preload),
        "defaults": lambda: _defaults_with(settings),
        "bf16-capped": lambda: _spec(settings, "bfloat16", {**lean, **cpu_host.AMX_ENV}),
        "defaults-chunked": lambda: _defaults_with(settings, enable_chunked_prefill=True),
        "all-cores": lambda: _defaults_with(settings, cpu_all_cores=True),
        "vllm-layout": lambda: _defaults_with(settings, cpu_all_cores=False),
        "defaults-eager": lambda: _defaults_with(settings, enforce_eager=True),
        "bf16": lambda: _spec(settings, "bfloat16", {**bind, **preload}),
        "fp16": lambda: _spec(settings, "float16", {**bind, **preload}),
        "bf16-lean": lambda: _spec(settings, "bfloat16", lean),
        "fp16-lean": lambda: _spec(settings, "float16", lean),
    }


def run_variant(name: str, spec: LaunchSpec, settings: Settings, args: argparse.Namespace) -> dict:
    load_before = os.getloadavg()[0]
    log = Path(tempfile.mkdtemp()) / f"vllm-{name}.log"
    with VLLMServer(settings, launch=spec, log_path=log) as server:
        check = self_test.ask(server.url, server.api_key, settings.resolved_served_name)
        say(
            f"{name}: healthy after {server.ready_after:.0f} s, dtype {spec.dtype}, answer "
            f"{'right' if check.ok else 'WRONG'}: {(check.answer or check.problem)[:70]!r}"
        )
        out = {
            "dtype": spec.dtype,
            "env": {
                k: v
                for k, v in spec.env.items()
                if k.startswith(("VLLM_CPU_O", "VLLM_CPU_N", "LD_", "ONEDNN_", "KMP_", "OMP_"))
            },
            "ready_s": round(server.ready_after, 1),
            "eager": "--enforce-eager" in spec.argv,
            "answer_ok": check.ok,
            "answer": check.answer or check.problem,
            "direct": {},
        }
        model = settings.resolved_served_name
        run_direct(server.url, server.api_key, model, PROMPT, concurrency=2, repeat=1, max_tokens=16)  # warm-up
        for c in args.concurrency:
            records, wall = run_direct(
                server.url, server.api_key, model, PROMPT, concurrency=c, repeat=args.repeat, max_tokens=args.max_tokens
            )
            out["direct"][c] = summarize(records, wall_seconds=wall)
            say(f"{name}: {c:>3} streams {out['direct'][c]['tok_s_total']:.1f} tok/s")
    out["load_before"], out["load_after"] = round(load_before, 1), round(os.getloadavg()[0], 1)
    return out


def table(results: dict) -> str:
    levels = sorted({int(c) for v in results["variants"].values() for c in v["direct"]})
    head = "| variant | dtype | answer right | " + " | ".join(f"{c} st. tok/s" for c in levels)
    rows = [head + " | TTFT p50 ms (1 st.) | load avg before/after |", "|---" * (len(levels) + 5) + "|"]
    today = results["variants"].get("today", {}).get("direct", {})
    for name, v in results["variants"].items():
        cells = []
        for c in levels:
            tok = v["direct"].get(c, {}).get("tok_s_total")
            base = today.get(c, {}).get("tok_s_total")
            cells.append(
                "-" if tok is None else f"{tok:.1f}" + (f" ({tok / base:.2f}x)" if base and name != "today" else "")
            )
        ttft = v["direct"].get(levels[0], {}).get("ttft_p50_ms")
        rows.append(
            f"| {name} | {v['dtype']} | {'yes' if v['answer_ok'] else 'NO'} | "
            + " | ".join(cells)
            + f" | {'-' if ttft is None else f'{ttft:.0f}'} | {v['load_before']} / {v['load_after']} |"
        )
    if results.get("baseline"):
        b = results["baseline"]
        rows.append(
            f"| transformers baseline | {b['dtype']} | - | {b['tok_s_total']:.1f} | | | "
            f"{b['ttft_p50_ms']:.0f} | {b['load_before']} / {b['load_after']} |"
        )
    return "\n".join(rows)


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """`count` processes that each keep one core busy while inside: a shared machine (a booth's
    browser, the page, the tests), where threads that wait on each other suffer most. Ours: ended by id."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def say(text: str) -> None:
    print(f"[cpu-variants] {text}", file=sys.stderr, flush=True)


def run_all(names: list[str], known: dict, settings: Settings, args: argparse.Namespace, results: dict) -> None:
    """Each named variant, then the transformers baseline at one stream (unless skipped), into results."""
    for name in names:
        results["variants"][name] = run_variant(name, known[name](), settings, args)
    if not args.skip_baseline:
        dtype = known["defaults"]().dtype or "auto"
        before = os.getloadavg()[0]
        one = baseline(
            argparse.Namespace(baseline_levels=[1], concurrency=[1], max_tokens=args.max_tokens), settings, dtype
        )
        results["baseline"] = {
            **one[1],
            "dtype": dtype,
            "load_before": round(before, 1),
            "load_after": round(os.getloadavg()[0], 1),
        }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m backend.bench.cpu_variants",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--variants", default="today,bind,preload,defaults,bf16")
    p.add_argument("--concurrency", type=_levels, default=[1, 4, 16])
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument("--busy-loops", type=int, default=0, help="keep this many cores busy during the run (contention)")
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "results")
    args = p.parse_args(argv)
    vllm_port, ui_port = free_ports(2)
    settings = load_settings(vllm_port=vllm_port, ui_port=ui_port, device="cpu")
    known = variants(settings)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    if unknown := [n for n in names if n not in known]:
        p.error(f"unknown variants {unknown}; known: {', '.join(known)}")
    _flags, cpu_model, _cpus = cpu_host.read_host()
    results = {
        "meta": {
            "date": datetime.now(UTC).strftime("%Y%m%d-%H%M%S"),
            "cpu": cpu_model,
            "max_tokens": args.max_tokens,
            "repeat": args.repeat,
            "busy_loops": args.busy_loops,
        },
        "variants": {},
    }
    try:
        with busy_loops(args.busy_loops):
            run_all(names, known, settings, args, results)
    except KeyboardInterrupt:
        say("interrupted: everything this run started has been stopped")
        return 130
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"cpu-variants-{results['meta']['date']}.json"
    path.write_text(json.dumps(results, indent=2))
    print(table(results))
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
