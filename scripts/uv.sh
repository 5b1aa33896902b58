#!/usr/bin/env bash
# The installer the setup uses: uv, pinned, in its own small environment (.tools), so that neither the
# UI nor the server environment holds it. `scripts/uv.sh --path` prints its path (installing it once);
# other arguments run it. Bootstrapped with the machine's own python3 and pip (about 5 s once).
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
uv=.tools/bin/uv
if [[ "$("$uv" --version 2>/dev/null)" != "uv $UV_VERSION"* ]]; then
    rm -rf .tools
    python3 -m venv .tools >&2
    .tools/bin/python -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" 2>&1 \
        | grep -v -e "is ignored: it is neither" >&2 || true
    [[ -x $uv ]] || { echo "[setup] could not install uv $UV_VERSION with python3 -m pip (see above)" >&2; exit 1; }
fi
if [[ "${1:-}" == "--path" ]]; then echo "$PWD/$uv"; else exec "$uv" "$@"; fi
