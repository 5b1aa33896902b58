#!/bin/bash
# Here, before the first device call and again before each bench call: the device's own scripts, on this machine.
# 1 pins = locks/ui.txt and a wheel per pin; 2 pip resolves the carried wheels for CPython 3.12 offline; 3 a real
# Python 3.12 venv from the carried wheels only (venv.sh); 4 the carried HAProxy (haproxy_setup.sh); 5 the
# project's vLLM argv (vllm_argv.py); 6 item1.sh against the fast server posing as vLLM (N=1 and N=2, 4 sessions,
# client spread over processes); 7 fast_sweep.sh (N=1,2, 2 fast servers behind HAProxy); 8 a launcher that dies
# is noticed at once. PF (default /tmp/pf) holds everything; nothing in the repo changes.
set -u
G=$(cd "$(dirname "$0")/.." && pwd); REPO=$(cd "$G/.." && pwd)
export PF=${PF:-/tmp/pf}; [ "${REUSE_VENV:-0}" = 1 ] && rm -rf "$PF/w" "$PF/ha" "$PF/x" || rm -rf "$PF"; mkdir -p "$PF"
export PYV=$PF/v/bin/python HADIR=$PF/ha W=$PF/w VPORT=18000 UPORT=17860 FPORT=18100 BENCH_DEVICE=cuda
export PY312=${PY312:-/root/.pyenv/versions/3.12.1/bin/python3.12}
step() { echo; echo "== $(date -u +%T) $*"; }
fail() { echo "PREFLIGHT FAIL: $*"; exit 1; }
step 1 pins; bash "$G/bin/pins_check.sh" || fail pins
step 2 pip dry-run for 3.12
PIP_CONFIG_FILE=/dev/null python3 -m pip install -q --dry-run --no-index --find-links "$G/ui-wheels" --python-version 3.12 \
  --implementation cp --only-binary=:all: --target "$PF/x" -r "$G/ui-pins.txt" || fail "dry-run"
step 3 venv from the carried wheels with "$("$PY312" --version)"
if [ "${REUSE_VENV:-0}" = 1 ] && [ -x "$PYV" ]; then echo "kept $PF/v (REUSE_VENV=1: only for re-runs whose pins did not change)"; else bash "$G/bin/venv.sh" || fail venv; fi
"$PYV" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version'|| fail "not 3.12"
step 4 HAProxy; bash "$G/bin/haproxy_setup.sh" || fail haproxy
step 5 vLLM argv; (export REPO RCHAT_DEVICE=cuda RCHAT_MODEL=/root/models/smollm2-135m-instruct RCHAT_API_KEY=benchkey
  env -u PYTHONPATH "$PYV" "$G/bin/vllm_argv.py" && RCHAT_API_SERVER_COUNT=4 env -u PYTHONPATH "$PYV" "$G/bin/vllm_argv.py" | tail -1) || fail argv
step 6 item1.sh against the fast server as vLLM
mkdir -p "$W"; (cd "$REPO" && exec env -u PYTHONPATH setsid "$PYV" -m backend.bench.fast_server $VPORT) > "$W/fastv.log" 2>&1 < /dev/null &
echo $! > "$W/vllm.pid"; cp /dev/null "$W/vllm-asc1.log"
trap 'kill -- -"$(cat "$W/vllm.pid")" 2>/dev/null' EXIT
SPP=4 BUDGET=200 MIN_LEVEL_S=20 LABEL="preflight" bash "$G/bin/item1.sh" "1 2" 8 1 2>&1 | tee "$PF/item1.out"
kill -- -"$(cat "$W/vllm.pid")"
[ "$(grep -c 'rc=0 |' "$PF/item1.out")" = 2 ] || fail "item1 (see $PF/item1.out)"
grep -q "2 processes behind HAProxy" "$PF/item1.out" || fail "N=2 not behind HAProxy"
step 7 fast_sweep.sh; KEEP_VLLM=1 SPP=4 BUDGET=200 MIN_LEVEL_S=20 bash "$G/bin/fast_sweep.sh" "1 2" 8 2 1 2>&1 | tee "$PF/fast.out"
[ "$(grep -c 'rc=0 |' "$PF/fast.out")" = 2 ] || fail "fast_sweep (see $PF/fast.out)"
step 8 a launcher that dies is noticed at once
source "$G/bin/pages.sh"; t0=$SECONDS
RCHAT_DATABASE_URL=mysql://x page_start 2 http://127.0.0.1:1 60 >/dev/null 2>&1 && fail "a bad launcher start passed"
[ $((SECONDS - t0)) -lt 30 ] || fail "waited $((SECONDS - t0)) s on a dead launcher"; echo "noticed after $((SECONDS - t0)) s"
step "PREFLIGHT PASS: results in $W/res: $(ls "$W/res" | tr '\n' ' ')"
