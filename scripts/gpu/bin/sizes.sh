#!/bin/bash
# Here: the MiB each planned call sends (tracked + untracked-not-ignored files + its carry); must stay under 64.
cd "$(dirname "$0")/../.." || exit 1
tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
mib() { echo "scale=2; $1/1048576" | bc; }
echo "tree $(mib "$tree") MiB"
call() { local b; b=$(du -cb "$@" | tail -1 | cut -f1); echo "$(mib $((tree + b))) MiB  carry: $*"; }
call .gpu/bin .gpu/ui-wheels .gpu/ui-pins.txt .gpu/deb
for i in 0 1 2 3 4 5 6 7; do call .gpu/bin .gpu/p$i; done
