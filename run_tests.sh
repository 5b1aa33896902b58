#!/usr/bin/env bash
# The test command: set up everything (test packages and Chromium included), then run pytest, two tests
# at a time (pytest-xdist; tests/xdist_plan.py says how the files are spread).
# Extra arguments go to pytest, e.g. `./run_tests.sh -k settings`; `-n 0` runs one test at a time.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev
exec .venv/bin/python -m pytest -n 2 --dist loadfile "$@"
