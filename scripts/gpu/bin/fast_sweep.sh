#!/bin/bash
# fast_sweep.sh ["1 2 4 8"] [64,256,1024] [FAST_PROCS] [REPEAT]: the page alone, N processes behind HAProxy, against
# the fast fake server (600 tok/s per stream after 15 ms, 256 tokens) run as FAST_PROCS processes behind a second
# HAProxy on $FPORT (one process tops out below 1,024 streams). Stops vLLM first (a quiet machine) unless KEEP_VLLM=1.
source "$(dirname "${BASH_SOURCE[0]}")/pages.sh"; source "$G/bin/bench_levels.sh"
NS=${1:-"1 2 4 8"}; LEVELS=${2:-64,256,1024}; FP=${3:-4}; REP=${4:-1}; SPP=${SPP:-16}
END=$(( $(date +%s) + ${BUDGET:-540} )); export PATH="$HADIR/bin:$PATH" MAXTOK=256
trap 'page_stop; kill -- ${FPIDS[@]/#/-} 2>/dev/null; collect fast' EXIT
[ "${KEEP_VLLM:-0}" = 1 ] || bash "$G/bin/vllm_stop.sh"
FPIDS=(); ports=()
for i in $(seq "$FP"); do
  p=$((FPORT + i)); ports+=("$p")
  ( cd "$REPO" && exec env -u PYTHONPATH setsid "$PYV" -m backend.bench.fast_server "$p" ) > "$W/fast-$p.log" 2>&1 < /dev/null &
  FPIDS+=($!)
done
for i in "${!ports[@]}"; do python3 "$G/bin/wait_url.py" "http://127.0.0.1:${ports[$i]}/health" 30 "${FPIDS[$i]}" || { tail "$W/fast-${ports[$i]}.log"; exit 1; }; done
if [ "$FP" -gt 1 ]; then
  { printf 'global\n    maxconn 8000\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 5m\n    timeout server 5m\n'
    printf 'frontend f\n    bind 127.0.0.1:%s\n    default_backend b\nbackend b\n    balance leastconn\n' "$FPORT"
    for p in "${ports[@]}"; do printf '    server s%s 127.0.0.1:%s maxconn 5000\n' "$p" "$p"; done; } > "$W/fast-haproxy.cfg"
  setsid haproxy -f "$W/fast-haproxy.cfg" -db > "$W/fast-haproxy.log" 2>&1 < /dev/null & FPIDS+=($!)
  FURL="http://127.0.0.1:$FPORT"
else FURL="http://127.0.0.1:${ports[0]}"; fi
python3 "$G/bin/wait_url.py" "$FURL/health" 20 || { cat "$W/fast-haproxy.log"; exit 1; }
echo "$(ts) fast server: $FP process(es) at $FURL"
for n in $NS; do
  [ $(( END - $(date +%s) )) -lt ${MIN_N_S:-60} ] && { echo "$(ts) N=$n skipped: under ${MIN_N_S:-60} s left"; continue; }
  page_start "$n" "$FURL" 120 || continue
  [ "$n" -gt 1 ] && warm_pages "$FURL" fast "http://127.0.0.1:$UPORT" "$n"
  bench_levels "$FURL" fast "http://127.0.0.1:$UPORT" "$LEVELS" "$REP" \
    "${LABEL:-H100}${KEEP_VLLM:+ (beside vLLM)} fast server x$FP, page N=$n$([ "$n" -gt 1 ] && echo " behind HAProxy" || echo ", no HAProxy"), ${SPP:-8} streams per client process" "fast-N$n" --max-tokens 256
  page_stop
done
uptime
