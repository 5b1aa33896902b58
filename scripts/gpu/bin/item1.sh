#!/bin/bash
# item1.sh ["1 4"] [16,64,256] [REPEAT]: issue 37 item 5, part 1. Waits for vLLM's /health (gives up at once if
# vLLM died), then for each N: the page with N processes (HAProxy for N > 1) in external mode against vLLM,
# direct and through the page side by side at each level, the page stopped. Ends by $BUDGET s (default 540).
source "$(dirname "${BASH_SOURCE[0]}")/pages.sh"; source "$G/bin/bench_levels.sh"
NS=${1:-"1 4"}; LEVELS=${2:-16,64,256}; REP=${3:-2}
END=$(( $(date +%s) + ${BUDGET:-540} )); export PATH="$HADIR/bin:$PATH"
trap 'page_stop; collect item1' EXIT
vp=$(cat "$W/vllm.pid" 2>/dev/null)
echo "$(ts) item1: N=[$NS] levels $LEVELS repeat $REP; $(nproc) cores; $(nvidia-smi -L 2>/dev/null | head -1)"
if ! python3 "$G/bin/wait_url.py" "http://127.0.0.1:$VPORT/health" "${HEALTH_T:-300}" "$vp"; then
  echo "---- vLLM log"; tail -60 "$W"/vllm-asc1.log; exit 1
fi
grep -m1 -iE "Starting vLLM|vLLM API server version" "$W"/vllm-asc1.log | cut -c1-200
for n in $NS; do
  [ $(( END - $(date +%s) )) -lt 90 ] && { echo "$(ts) N=$n skipped: under 90 s left"; continue; }
  page_start "$n" "http://127.0.0.1:$VPORT" 120 || continue
  [ "$n" -gt 1 ] && warm_pages "http://127.0.0.1:$VPORT" "$KEY" "http://127.0.0.1:$UPORT" "$n"
  bench_levels "http://127.0.0.1:$VPORT" "$KEY" "http://127.0.0.1:$UPORT" "$LEVELS" "$REP" \
    "${LABEL:-H100 vllm 0.24} page N=$n$([ "$n" -gt 1 ] && echo " behind HAProxy" || echo ", no HAProxy"), ${SPP:-8} streams per client process" "vllm-N$n" --max-tokens "$MAXTOK"
  page_stop
done
uptime
