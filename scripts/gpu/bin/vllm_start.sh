#!/bin/bash
# Start vLLM detached (setsid, output to $W/vllm*.log) with the project's GPU argv; returns at once.
# Env: RCHAT_API_SERVER_COUNT=K for --api-server-count K. Writes $W/vllm.pid.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export REPO RCHAT_DEVICE=cuda RCHAT_MODEL="$MODEL" RCHAT_VLLM_PORT="$VPORT" RCHAT_API_KEY="$KEY" VPY
eval "$(env -u PYTHONPATH "$PYV" "$G/bin/vllm_argv.py")" || { echo "vllm_start: no argv"; exit 1; }
source "$G/bin/env.sh"
LOG="$W/vllm-asc${RCHAT_API_SERVER_COUNT:-1}.log"
echo "$(ts) vllm_start: ${VARGV[*]}" | tee "$LOG"
# No `cd && ... &`: that backgrounds a subshell, whose pid (not vLLM's, nor its session's) would land in
# vllm.pid, die with the device call, and leave vllm_stop.sh killing nothing.
cd /root || exit 1
setsid nohup "${VARGV[@]}" >> "$LOG" 2>&1 < /dev/null &
echo $! > "$W/vllm.pid"; echo "vllm pid $(cat "$W/vllm.pid"), log $LOG"
