#!/bin/bash
# api_sweep.sh ["4"] [256] [REPEAT]: vLLM restarted with --api-server-count K (RCHAT_API_SERVER_COUNT) for each K,
# direct only at the levels (compare with item1's direct rows at K=1, same machine). Ends by $BUDGET s.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"; source "$G/bin/bench_levels.sh"
KS=${1:-4}; LEVELS=${2:-256}; REP=${3:-2}
END=$(( $(date +%s) + ${BUDGET:-540} ))
trap 'collect api' EXIT
for k in $KS; do
  [ $(( END - $(date +%s) )) -lt 120 ] && { echo "$(ts) K=$k skipped: under 120 s left"; continue; }
  bash "$G/bin/vllm_stop.sh"
  RCHAT_API_SERVER_COUNT=$k bash "$G/bin/vllm_start.sh"
  python3 "$G/bin/wait_url.py" "http://127.0.0.1:$VPORT/health" $(( END - $(date +%s) - 40 )) "$(cat "$W/vllm.pid")" \
    || { tail -40 "$W/vllm-asc$k.log"; continue; }
  bench_levels "http://127.0.0.1:$VPORT" "$KEY" "" "$LEVELS" "$REP" "${LABEL:-H100 vllm 0.24} api-server-count $k" "asc$k" --skip-ui
done
bash "$G/bin/vllm_stop.sh"
