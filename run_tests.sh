#!/usr/bin/env bash
# The test command: set up everything (test packages and Chromium included), then run pytest.
# Extra arguments go to pytest, e.g. `./run_tests.sh -k settings`.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev
exec .venv/bin/python -m pytest "$@"
