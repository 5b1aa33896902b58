#!/bin/bash
# Fails unless .gpu/ui-pins.txt equals locks/ui.txt (name==version lines) and every pin has its wheel in .gpu/ui-wheels.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
norm() { grep -E '^[A-Za-z0-9].*==' "$1" | sed 's/ .*//; s/[-_.]\+/-/g' | tr A-Z a-z | sort; }
if ! diff <(norm "$REPO/locks/ui.txt") <(norm "$G/ui-pins.txt"); then
  echo "pins_check: FAIL: locks/ui.txt differs from the carried pins (.gpu/ui-pins.txt): fetch the changed pins again"; exit 1; fi
miss=0
while read -r pin; do
  n=${pin%%==*}; v=${pin#*==}
  ls "$G/ui-wheels" | tr A-Z a-z | sed 's/[-_.]\+/-/g' | grep -q "^$n-$(echo "$v" | sed 's/[-_.]\+/-/g')-" || { echo "pins_check: no wheel for $pin"; miss=1; }
done < <(norm "$REPO/locks/ui.txt" | sed 's/-\([^=]*\)==/-\1==/')
[ $miss = 0 ] || exit 1
echo "pins_check: ok, $(norm "$REPO/locks/ui.txt" | wc -l) pins, $(ls "$G/ui-wheels" | wc -l) wheels ($(du -sh "$G/ui-wheels" | cut -f1))"
