#!/bin/bash
# Stop the vLLM started by vllm_start.sh (its whole session), wait until its port and GPU memory are free.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
p=$(cat "$W/vllm.pid" 2>/dev/null) || exit 0
kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; for i in $(seq 60); do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.5; done
kill -KILL -- "-$p" 2>/dev/null; rm -f "$W/vllm.pid"
for i in $(seq 20); do python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$VPORT))!=0)" || break; sleep 0.5; done
nvidia-smi --query-gpu=memory.used --format=csv,noheader 2>/dev/null | sed 's/^/vllm_stop: GPU memory used /'
