#!/usr/bin/env bash
# The installer the setup uses: uv, pinned, in its own small environment (.tools), so that neither the
# UI nor the server environment holds it. `scripts/uv.sh --path` prints its path (installing it once);
# other arguments run it. Bootstrapped with the machine's own python3 and pip (5-15 s) the first time on
# a machine; its binary is kept in the user's cache too, so a second clone copies it (under a second).
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
uv=.tools/bin/uv
kept="${XDG_CACHE_HOME:-$HOME/.cache}/rchat/uv-$UV_VERSION/uv"
is_ours() { [[ "$("$1" --version 2>/dev/null)" == "uv $UV_VERSION"* ]]; }
if ! is_ours "$uv"; then
    rm -rf .tools
    if is_ours "$kept"; then
        mkdir -p .tools/bin && cp "$kept" "$uv"
    else
        python3 -m venv .tools >&2
        .tools/bin/python -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" 2>&1 \
            | grep -v -e "is ignored: it is neither" >&2 || true
        [[ -x $uv ]] || { echo "[setup] could not install uv $UV_VERSION with python3 -m pip (see above)" >&2; exit 1; }
        { mkdir -p "$(dirname "$kept")" && cp "$uv" "$kept.tmp.$$" && mv "$kept.tmp.$$" "$kept"; } 2>/dev/null || true
    fi
fi
if [[ "${1:-}" == "--path" ]]; then echo "$PWD/$uv"; else exec "$uv" "$@"; fi
