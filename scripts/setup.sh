#!/usr/bin/env bash
# Creates whatever is missing, and nothing else: the UI environment (.venv), the server environment
# (.venv-vllm, CPU or CUDA build picked by backend/server/install.py), and the embedded model.
# `scripts/setup.sh --dev` adds the test and benchmark packages and Debian's Chromium.
# A second run only compares requirement hashes: it installs and converts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[[ "${1:-}" == "--dev" ]] && dev=1
say() { echo "[setup] $*" >&2; }
quiet_pip() { grep -v -e "is ignored: it is neither" -e "^$" || true; }

# One stamp per requirements file: the dev install includes the runtime one, so it writes both.
stamp_ok() { [[ -x .venv/bin/python && "$(cat ".venv/.installed-$1" 2>/dev/null)" == "$(sha256sum < "$1")" ]]; }
req=requirements.txt
(( dev )) && req=requirements-dev.txt
if ! stamp_ok "$req" || ! stamp_ok requirements.txt; then
    say "creating the UI environment .venv from $req (about 80 s the first time)"
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r "$req" 2>&1 | quiet_pip
    for f in requirements.txt "$req"; do sha256sum < "$f" > ".venv/.installed-$f"; done
fi

# Bad settings stop us here, before minutes of installing the server environment.
.venv/bin/python -m backend check >/dev/null

.venv/bin/python -m backend.server.install

if (( dev )) && [[ ! -x /usr/bin/chromium ]]; then
    say "installing Debian's chromium for the browser tests (about 50 s)"
    if [[ $(id -u) -eq 0 ]]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi
