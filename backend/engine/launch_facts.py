"""What a launched vLLM engine is, in the terms that change its tokens (pure: starts nothing).

The launcher publishes these facts in its status file (backend/server/status_file.py) and every
answer's stamp carries them, so a replay can check "same engine" instead of assuming it: dtype, max
model length, quantization, eager mode, prefix caching, the other flags, the device and CPU, and a
hash of the model's weights, tokenizer and config files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from backend.engine.vllm_command import LaunchSpec
from backend.model_info import model_files_hash

# argv parts that say where the server listens or what it is called, not how it computes.
NOT_TOKEN_FLAGS = ("--host", "--port", "--served-model-name", "--model")
SECRET_FLAG = re.compile(r"(api[-_]?key|hf[-_]token|secret|password|ssl[-_]keyfile)", re.IGNORECASE)
SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)$")
CPU_FLAGS_OF_NOTE = ("amx_bf16", "avx512_bf16", "avx512f")  # which kernels a CPU engine can take


def flag_value(argv: list[str], name: str) -> str | None:
    """The value of `name` in argv (`--x v` or `--x=v`), the last one winning as in argparse."""
    value = None
    for i, part in enumerate(argv):
        if part == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif part.startswith(name + "="):
            value = part.split("=", 1)[1]
    return value


def token_flags(argv: list[str]) -> list[str]:
    """The vLLM flags after the entry point, without listen address and names, secrets replaced."""
    start = argv.index("-m") + 2 if "-m" in argv else 1
    out: list[str] = []
    skip = False
    for i, part in enumerate(argv[start:], start):
        if skip:
            skip = False
            continue
        name = part.split("=", 1)[0]
        takes_value = "=" not in part and i + 1 < len(argv) and not argv[i + 1].startswith("--")
        if name in NOT_TOKEN_FLAGS:
            skip = takes_value
            continue
        if SECRET_FLAG.search(name):
            out.append(f"{name}=<hidden>")
            skip = takes_value
            continue
        out.append(part)
    return out


def bool_flag(argv: list[str], name: str) -> bool | None:
    """True/False when `--name` / `--no-name` is on the command line (the last one wins, as in
    argparse: RCHAT_VLLM_EXTRA_ARGS comes last); None means vLLM's default."""
    state = None
    for part in argv:
        if part == f"--{name}":
            state = True
        elif part == f"--no-{name}":
            state = False
    return state


def cpu_facts(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """The CPU's model name and the flags that pick vLLM's CPU kernels (bf16 differs with AMX)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return {"cpu": "unknown"}
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.MULTILINE)
    present = set(flags.group(1).split()) if flags else set()
    return {
        "cpu": model.group(1).strip() if model else "unknown",
        "cpu_flags": [f for f in CPU_FLAGS_OF_NOTE if f in present],
    }


def model_config_dtype(model_path: str) -> str | None:
    try:
        data = json.loads((Path(model_path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    dtype = data.get("torch_dtype") or data.get("dtype")
    return str(dtype) if dtype else None


def launch_facts(spec: LaunchSpec, *, model_path: str, with_hash: bool = True) -> dict[str, Any]:
    """The engine facts of one launch. dtype 'auto' means the model's own (model_dtype)."""
    argv = spec.argv
    max_len = flag_value(argv, "--max-model-len")
    facts: dict[str, Any] = {
        "device": spec.device,
        "dtype": flag_value(argv, "--dtype") or "auto",
        "model_dtype": model_config_dtype(model_path),
        "max_model_len": int(max_len) if max_len and max_len.isdigit() else max_len,
        "quantization": flag_value(argv, "--quantization"),
        "enforce_eager": "--enforce-eager" in argv,
        "enable_prefix_caching": bool_flag(argv, "enable-prefix-caching"),
        "enable_chunked_prefill": bool_flag(argv, "enable-chunked-prefill"),
        "flags": token_flags(argv),
        "env": {k: v for k, v in sorted(spec.env.items()) if not SECRET_ENV.search(k)},
        "model_path": model_path,
        "model_hash": model_files_hash(model_path) if with_hash else None,
    }
    if spec.device == "cpu":
        facts.update(cpu_facts())
    return facts
