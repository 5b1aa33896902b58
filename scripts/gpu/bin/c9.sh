#!/bin/bash
# Device call 9 (carries .gpu/bin .gpu/p7): last part staged, install.sh (wheels to /root/site, model), the page venv
# awaited, vLLM started (setsid, $W/vllm-asc1.log), then item1.sh (N=1 and 4 at 16,64,256) within the call's
# 540 s; results and logs to $OUT/item1.tgz. Env: NS, LEVELS, REP, SPP, CALL_S (default 540).
# FAST_WINDOW=S (default 0: off) first runs fast_sweep.sh for S seconds while vLLM compiles (FAST_NS, FAST_LEVELS,
# FAST_PROCS), labelled as beside vLLM's start, results in $OUT/fast.tgz.
T0=$SECONDS
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
trap 'collect item1' EXIT
set -o pipefail; bash "$G/bin/stage.sh" | tail -1 || exit 1; set +o pipefail
echo "$(ts) install.sh"
if ! bash "$G/bin/install.sh" > "$W/install.log" 2>&1; then echo "install FAILED"; tail -30 "$W/install.log"; exit 1; fi
tail -2 "$W/install.log"; echo "$(ts) installed after $((SECONDS - T0)) s"
for i in $(seq 120); do [ -f "$W/venv.rc" ] && break; sleep 0.5; done
tail -3 "$W/venv.log"; [ "$(cat "$W/venv.rc" 2>/dev/null)" = 0 ] || { echo "page venv not ready"; exit 1; }
bash "$G/bin/vllm_start.sh" || exit 1
trap - EXIT
if [ "${FAST_WINDOW:-0}" -gt 0 ]; then  # use vLLM's cold start (about 165 s on the H100) for part of the fast sweep
  echo "$(ts) fast sweep beside vLLM's start: ${FAST_WINDOW} s, N=[${FAST_NS:-1 2 4 8}] at ${FAST_LEVELS:-256}"
  KEEP_VLLM=1 BUDGET=$FAST_WINDOW bash "$G/bin/fast_sweep.sh" "${FAST_NS:-1 2 4 8}" "${FAST_LEVELS:-256}" "${FAST_PROCS:-4}" 1
fi
BUDGET=$(( ${CALL_S:-540} - (SECONDS - T0) )) bash "$G/bin/item1.sh" "${NS:-1 4}" "${LEVELS:-16,64,256}" "${REP:-2}"
