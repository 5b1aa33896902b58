# Sourced. bench_levels URL KEY UI_URL LEVELS REPEAT LABEL TAG [extra bench args]: one bench run per level
# (a level cut off by the deadline loses only itself), each within what is left before $END (epoch s).
# SPP: client streams (direct) and page sessions per client process (--streams-per-process, default 8).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_levels() {
  local url=$1 key=$2 ui=$3 levels=$4 rep=$5 label=$6 tag=$7; shift 7
  local c left
  for c in ${levels//,/ }; do
    left=$(( END - $(date +%s) ))
    if [ "$left" -lt "${MIN_LEVEL_S:-40}" ]; then echo "$(ts) bench $tag c=$c skipped: $left s left"; continue; fi
    echo "$(ts) bench $tag c=$c (limit $left s)"
    ( cd "$REPO" && env -u PYTHONPATH RCHAT_DEVICE="${BENCH_DEVICE:-cuda}" PYTHONUNBUFFERED=1 timeout -k 5 "$left" "$PYV" -m backend.bench \
        --url "$url" --api-key "$key" ${ui:+--ui-url "$ui"} --concurrency "$c" --repeat "$rep" --skip-baseline \
        --skip-browser --streams-per-process "${SPP:-8}" --out "$W/res" --label "$label c=$c" "$@" ) > "$W/bench-$tag-c$c.log" 2>&1
    echo "  rc=$? $(grep -E '^\| (direct|ui) |^\| *[0-9]+ \| [0-9.]+ %' "$W/bench-$tag-c$c.log" | tr -s ' ' | paste -sd ';' | cut -c1-600)"
    grep -E 'Traceback|Error:|error:' "$W/bench-$tag-c$c.log" | head -3
  done
}
collect() {  # collect NAME: results and logs (not the data folders) as $OUT/NAME.tgz, and the bench tables
  [ -n "$OUT" ] || return 0
  tar czf "$OUT/$1.tgz" -C "$W" --exclude='data-*' --exclude='*.sqlite3*' . 2>/dev/null
  ls -la "$OUT"
}
warm_pages() {  # warm_pages URL KEY UI_URL N: 2 answers per page process (leastconn spreads them), not kept
  ( cd "$REPO" && env -u PYTHONPATH RCHAT_DEVICE="${BENCH_DEVICE:-cuda}" timeout 60 "$PYV" -m backend.bench --url "$1" \
      --api-key "$2" --ui-url "$3" --concurrency $((2 * $4)) --repeat 1 --skip-baseline --skip-browser \
      --streams-per-process 64 --max-tokens 16 --out "$W/warm" --label warm ) > "$W/warm-N$4.log" 2>&1
  echo "$(ts) warm-up N=$4 rc=$?"
}
