#!/usr/bin/env bash
# The one command: set up what is missing, start vLLM, wait for /health, start the chat on
# http://localhost:7860, and stop vLLM when the chat exits. Settings: .env (see .env.example).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
# exec: the launcher takes this script's pid, so signals sent to the script reach it directly.
exec .venv/bin/python -m backend run
