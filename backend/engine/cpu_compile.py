"""Whether vLLM on a CPU runs compiled (torch.compile) or eager, and why, for the start-up output.

Compiled is the default where it can be built: it streams faster than eager on every CPU measured,
in the browser too, and answers as right; the price is start-up, a first compile on each machine and
a slower start from inductor's cache after (docs/benchmark.md, "torch.compile by default on a CPU"
and "torch.compile on the AMD host"). That cache is kept in the user's cache folder rather than /tmp,
so a reboot or a second clone of the app does not compile again (`compile_env`,
backend/server/compile_cache.py).

torch.compile's CPU kernels are C++ that inductor builds at start-up, so compiling needs a C++
compiler and the Python headers of vLLM's interpreter. Without them vLLM would die while warming up;
we start it eager instead and say why. RCHAT_ENFORCE_EAGER, when set, wins.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

# vLLM 0.32's own "AOT" cache of compiled models fails to load on CPU ("'function' object has no
# attribute 'finalize_loading'") and compiles again at every start; with it off, inductor's cache of
# compiled kernels loads and later starts are quicker (docs/benchmark.md, "torch.compile by default").
COMPILE_ENV = {"VLLM_USE_AOT_COMPILE": "0"}
INDUCTOR_ENV = "TORCHINDUCTOR_CACHE_DIR"


def inductor_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """TORCHINDUCTOR_CACHE_DIR if set, else the user's cache ($XDG_CACHE_HOME or ~/.cache)/rchat/torchinductor:
    inductor's own default, /tmp/torchinductor_<user>, is wiped by a reboot."""
    if environ.get(INDUCTOR_ENV):
        return Path(environ[INDUCTOR_ENV])
    return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rchat" / "torchinductor"


def compile_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables a compiled CPU start adds to vLLM's environment."""
    return {**COMPILE_ENV, INDUCTOR_ENV: str(inductor_dir(environ))}


def toolchain_problem(vllm_python: str) -> str | None:
    """What is missing to compile on this machine, or None when a C++ compiler and Python.h are there."""
    compiler = os.environ.get("CXX") or "g++"
    if not shutil.which(compiler):
        return f"no C++ compiler ({compiler}) was found"
    include = python_include(vllm_python)
    if include is None or not (Path(include) / "Python.h").is_file():
        return f"the Python headers (Python.h) of {vllm_python} were not found"
    return None


@functools.cache
def python_include(vllm_python: str) -> str | None:
    """The include folder of the interpreter vLLM runs on (-I -S: no site, so it answers at once)."""
    code = "import sysconfig; print(sysconfig.get_paths()['include'])"
    try:
        out = subprocess.run(
            [vllm_python, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def choose(setting: bool | None, problem: str | None) -> tuple[bool, str]:
    """(eager, why) on a CPU, from RCHAT_ENFORCE_EAGER (None: not set) and toolchain_problem()."""
    if setting is True:
        return True, "eager, set by RCHAT_ENFORCE_EAGER (starts sooner, streams about a fifth slower)"
    if setting is False:
        if problem:
            return False, (
                f"torch.compile, set by RCHAT_ENFORCE_EAGER=false; warning: {problem}, so vLLM "
                "may fail while compiling (unset RCHAT_ENFORCE_EAGER to start eager)"
            )
        return False, "torch.compile, set by RCHAT_ENFORCE_EAGER=false"
    if problem:
        return True, (
            f"eager: {problem}, which torch.compile needs (install g++ and the Python "
            "headers for about 1.25x the speed)"
        )
    return False, (
        "torch.compile: about 1.25x eager's speed; the first start on this machine compiles "
        "for about a minute, later starts use the cache (RCHAT_ENFORCE_EAGER=true starts sooner)"
    )
