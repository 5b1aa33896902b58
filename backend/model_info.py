"""Facts read from a served model's directory (no server needed): generation defaults, files hash."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

# Keys of generation_config.json that change sampling when a request leaves them out.
SAMPLING_KEYS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "max_new_tokens",
)


def generation_config(model_path: str) -> dict[str, Any]:
    """The sampling keys of the model's generation_config.json, which vLLM applies by default."""
    try:
        data = json.loads((Path(model_path) / "generation_config.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: data[k] for k in SAMPLING_KEYS if k in data}


def chat_template_takes(model_path: str, variable: str) -> bool:
    """Whether the model's chat template reads `variable` (e.g. reasoning_effort); False when unknown."""
    root = Path(model_path)
    texts = []
    for name in ("chat_template.jinja", "tokenizer_config.json", "chat_template.json"):
        try:
            texts.append((root / name).read_text())
        except OSError:
            continue
    return any(variable in text for text in texts)


# Files whose bytes decide the tokens: weights, tokenizer, model config, chat template.
HASHED_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".model", ".tiktoken", ".jinja")
HASHED_NAMES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "preprocessor_config.json",
    "chat_template.json",
)
HASH_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "model-hashes.json"


def hashed_files(model_path: str) -> list[Path]:
    """The files of a model directory that change its tokens, in a stable order."""
    root = Path(model_path)
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".") and (p.name in HASHED_NAMES or p.suffix in HASHED_SUFFIXES)
    )


def model_files_hash(model_path: str, *, cache_path: Path = HASH_CACHE) -> str | None:
    """sha256 over the model's weights, tokenizer and config files; None if it is not a local directory.

    Hashing gigabytes takes a while, so the result is cached on disk, keyed by the directory and
    every file's name, size and mtime: a changed file gives a new key and is hashed again."""
    files = hashed_files(model_path)
    if not files:
        return None
    try:
        stats = [(str(p.relative_to(model_path)), p.stat()) for p in files]
    except OSError:
        return None
    key_source = [str(Path(model_path).resolve()), [[name, st.st_size, st.st_mtime_ns] for name, st in stats]]
    key = hashlib.sha256(json.dumps(key_source).encode()).hexdigest()
    cache = _read_cache(cache_path)
    if key in cache:
        return cache[key]
    digest = hashlib.sha256()
    try:
        for path in files:
            digest.update(str(path.relative_to(model_path)).encode() + b"\0")
            with open(path, "rb") as fh:
                while block := fh.read(1 << 20):
                    digest.update(block)
    except OSError:
        return None  # unreadable: the stamp says the hash is unknown rather than guess
    value = f"sha256:{digest.hexdigest()}"
    _write_cache(cache_path, {**cache, key: value})
    return value


def _read_cache(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(path: Path, cache: dict[str, str]) -> None:
    """Atomic replace; a cache we cannot write only costs hashing again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(cache, indent=1))
        tmp.replace(path)
    except OSError:
        pass
