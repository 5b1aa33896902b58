#!/usr/bin/env bash
# Creates whatever is missing, and nothing else: the UI environment (.venv, from locks/ui.txt), the
# server environment (.venv-vllm, CPU or CUDA lock picked by backend/server/install.py), and the
# embedded model. `scripts/setup.sh --dev` installs locks/ui-dev.txt (tests, benchmark), Chromium and
# PostgreSQL (Debian's packages, for the browser and PostgreSQL history tests).
# Installs are exact (uv pip sync of a lock); a second run only compares lock hashes.
# Each step logs to .cache/logs/setup-<step>.log; a failure names the step and its log.
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[[ "${1:-}" == "--dev" ]] && dev=1
say() { echo "[setup] $*" >&2; }
mkdir -p .cache/logs
started=$SECONDS

# step NAME COMMAND...: run it with its output in its own log; on failure say which step and where.
step() {
    local name=$1 log=".cache/logs/setup-$1.log"; shift
    if ! "$@" >"$log" 2>&1; then
        say "step '$name' failed. Its log: $log. Last lines:"
        tail -n 15 "$log" | sed 's/^/    /' >&2
        say "fix what the log names (network, disk space, a proxy), then run the same command again;"
        say "finished steps are kept, so only this one is redone."
        exit 1
    fi
}

uv=$(scripts/uv.sh --path) || { say "step 'uv' failed: python3 -m pip could not install uv (see above)"; exit 1; }
export UV_CACHE_DIR="${UV_CACHE_DIR:-$HOME/.cache/uv}"
# uv does not read pip's configuration: pass on where this machine keeps its own wheels and index.
# Asked only before an install (pip takes a second per question); install.py asks the same for its own.
pip_conf() { python3 -m pip config get "global.$1" 2>/dev/null || true; }
pip_sources() {
    export UV_FIND_LINKS="${UV_FIND_LINKS:-${PIP_FIND_LINKS:-$(pip_conf find-links)}}"
    local idx="${PIP_INDEX_URL:-$(pip_conf index-url)}"
    [[ -n "$idx" && -z "${UV_DEFAULT_INDEX:-}" ]] && export UV_DEFAULT_INDEX="$idx"
    return 0
}

# One stamp per lock. locks/ui-dev.txt is compiled with locks/ui.txt as constraints, so a test
# environment holds the runtime one exactly: a plain start after ./run_tests.sh keeps the test
# packages (a test that runs ./start_service.sh must not strip pytest from under itself).
stamp_ok() { [[ -x .venv/bin/python && "$(cat ".venv/.installed-$1" 2>/dev/null)" == "$(sha256sum < "locks/$1.txt")" ]]; }
lock=ui
(( dev )) && lock=ui-dev
if ! stamp_ok ui || ! stamp_ok "$lock"; then
    say "installing the UI environment .venv from locks/$lock.txt"
    pip_sources
    [[ -x .venv/bin/python ]] || step ui-venv "$uv" venv --quiet --python python3 .venv
    rm -f .venv/.installed-*
    # --compile-bytecode: otherwise the page's first start compiles sympy & co. on import, which on a
    # loaded 2-core machine took longer than the page's start-up timeout.
    step ui-install "$uv" pip sync --compile-bytecode --python .venv/bin/python "locks/$lock.txt"
    for f in ui "$lock"; do sha256sum < "locks/$f.txt" > ".venv/.installed-$f"; done
    say "UI environment ready ($((SECONDS - started)) s so far)"
fi

# One Python step (a Ctrl-C during it ends it without a stack trace: backend/stop_request.py): bad settings
# stop us here; then the server environment and the embedded model when missing (backend/server/install.py);
# it prints how many chat page processes the settings ask for.
workers=$(.venv/bin/python -m backend prepare)

# tcmalloc, preloaded into vLLM on CPU hosts (backend/engine/cpu_host.py): faster allocation, as vLLM's
# CPU guide asks. Optional: without it vLLM runs, a little slower, so a failure here only warns.
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [[ "$(uname -m)" == x86_64 && ! -e $tcmalloc ]] && ! command -v nvidia-smi >/dev/null; then
    sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo -n"
    say "installing Debian's libtcmalloc-minimal4 for vLLM on the CPU (a few seconds)"
    if ! { command -v apt-get >/dev/null && $sudo apt-get install -y -qq libtcmalloc-minimal4 \
            >.cache/logs/setup-tcmalloc.log 2>&1; }; then
        say "warning: could not install libtcmalloc-minimal4 (no apt-get, no root, or no network; see"
        say "  .cache/logs/setup-tcmalloc.log). vLLM runs without it, somewhat slower. To add it later:"
        say "  sudo apt-get install libtcmalloc-minimal4"
    fi
fi

# HAProxy, in front of several chat page processes (RCHAT_PAGE_WORKERS > 1, the default on a GPU host:
# backend/server/page_pool.py). Optional: without it the launcher runs one page process and says so.
if (( workers > 1 )) && ! command -v haproxy >/dev/null && [[ ! -x /usr/sbin/haproxy ]]; then
    sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo -n"
    say "installing Debian's haproxy for $workers chat page processes (a few seconds)"
    if ! { command -v apt-get >/dev/null && { $sudo apt-get install -y -qq haproxy || { $sudo apt-get update -qq \
            && $sudo apt-get install -y -qq haproxy; }; } >.cache/logs/setup-haproxy.log 2>&1; }; then
        say "warning: could not install haproxy (no apt-get, no root, or no network; see"
        say "  .cache/logs/setup-haproxy.log). The chat page runs as one process. To add it later:"
        say "  sudo apt-get install haproxy"
    fi
fi

# The tests' own programs, from Debian: chromium for the browser tests (about 50 s), postgresql for
# the history tests on PostgreSQL, which start and stop a throwaway server of their own (initdb, pg_ctl),
# and haproxy for the tests of several page processes.
if (( dev )); then
    apt_missing=()
    [[ -x /usr/bin/chromium ]] || apt_missing+=(chromium)
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || apt_missing+=(postgresql)
    command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || apt_missing+=(haproxy)  # the page-pool tests
    if (( ${#apt_missing[@]} )); then
        say "installing Debian's ${apt_missing[*]} for the tests (about a minute)"
        sudo=""; [[ $(id -u) -eq 0 ]] || sudo=sudo
        step dev-apt-update $sudo apt-get update -qq
        step dev-apt-install $sudo apt-get install -y -qq "${apt_missing[@]}"
    fi
fi
say "set-up done in $((SECONDS - started)) s"
