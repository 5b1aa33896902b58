#!/bin/bash
# The page's venv from the carried wheels only (no index), PYTHONPATH unset. PY312: the Python 3.12 to use.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
: "${PY312:=python3}" "${WHEELS:=$G/ui-wheels}" "${PINS:=$G/ui-pins.txt}"
trap 'echo $? > "$W/venv.rc"' EXIT; rm -f "$W/venv.rc"
t0=$SECONDS
env -u PYTHONPATH "$PY312" -m venv "$(dirname "$(dirname "$PYV")")" || exit 1
env -u PYTHONPATH PIP_CONFIG_FILE=/dev/null PIP_CONSTRAINT= PIP_FIND_LINKS= PIP_EXTRA_INDEX_URL= "$PYV" -m pip install -q \
  --no-index --find-links "$WHEELS" -r "$PINS" || exit 1
(cd /tmp && env -u PYTHONPATH "$PYV" -c "import chainlit, openai, aiohttp, httpx_aiohttp, asyncpg, psutil, pydantic_settings, socketio; print('page venv ok', chainlit.__version__ if hasattr(chainlit,'__version__') else '')") || exit 1
echo "venv.sh: $(($SECONDS - t0)) s"
