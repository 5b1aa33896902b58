#!/bin/bash
# fetch each pin of PINS for CPython 3.12 manylinux x86_64, no deps, six at a time; source-only pins are built.
pins=$1; dir=$2; mkdir -p "$dir"
one() {
  pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
   --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
   -d "$2" "$1" >/dev/null 2>&1 || { pip wheel -q --no-deps "$1" -w "$2" >/dev/null 2>&1 && echo "built $1" || echo "FAILED $1"; }
}
export -f one
xargs -P6 -I{} bash -c 'one "$@"' _ {} "$dir" < "$pins"
