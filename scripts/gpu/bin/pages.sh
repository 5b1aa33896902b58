# Sourced: page_start N BASE_URL [TIMEOUT] and page_stop. The project's launcher in external mode
# (`python -m backend run` with RCHAT_BASE_URL: pages only, no vLLM), RCHAT_PAGE_WORKERS=N, HAProxy wrapper on PATH.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
page_start() {
  local n=$1 base=$2 t=${3:-150}
  PLOG="$W/pages-N$n-$(date -u +%H%M%S).log"
  ( cd "$REPO" && exec env -u PYTHONPATH PATH="$HADIR/bin:$PATH" PYTHONUNBUFFERED=1 \
      RCHAT_BASE_URL="$base" RCHAT_API_KEY="$KEY" RCHAT_PAGE_WORKERS="$n" RCHAT_UI_PORT="$UPORT" \
      RCHAT_LOG_DIR="$W/logs-N$n" RCHAT_DATA_DIR="$W/data-N$n" RCHAT_DEFAULT_TEMPERATURE=0 \
      RCHAT_DEFAULT_MAX_TOKENS="$MAXTOK" RCHAT_DEVICE=cuda setsid "$PYV" -m backend run ) > "$PLOG" 2>&1 < /dev/null &
  PPID_L=$!
  echo "$(ts) page_start N=$n launcher pid $PPID_L, log $PLOG"
  if ! python3 "$G/bin/wait_url.py" "http://127.0.0.1:$UPORT/" "$t" "$PPID_L"; then
    echo "---- launcher log"; tail -40 "$PLOG"
    for f in "$W/logs-N$n"/ui-*.log "$W/logs-N$n"/haproxy-*.log; do [ -f "$f" ] && { echo "---- $f"; tail -25 "$f"; }; done
    page_stop; return 1
  fi
  grep -E "chat page|HAProxy" "$PLOG" | head -3
}
page_stop() {  # Ctrl-C to the launcher, wait (at most 20 s) for it, then until the page port is free
  [ -n "$PPID_L" ] || return 0
  kill -INT "$PPID_L" 2>/dev/null
  local i; for i in $(seq 40); do
    [ "$(cut -d' ' -f3 /proc/$PPID_L/stat 2>/dev/null)" = "" ] && break
    [ "$(awk '{print $3}' /proc/$PPID_L/stat 2>/dev/null)" = Z ] && break
    sleep 0.5; done
  kill -KILL -- "-$PPID_L" 2>/dev/null; wait "$PPID_L" 2>/dev/null
  for i in $(seq 20); do python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$UPORT))!=0)" || break; sleep 0.5; done
  echo "$(ts) page_stop: launcher $PPID_L stopped ($(tail -1 "$PLOG"))"; PPID_L=
}
