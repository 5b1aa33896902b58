#!/bin/bash
# Device call 1 (carries .gpu/bin .gpu/ui-wheels .gpu/ui-pins.txt .gpu/deb): machine facts; the page venv built from
# a copy of the wheels in the background (setsid, $W/venv.log, $W/venv.rc when done); HAProxy unpacked into $HADIR.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
: "${UIW:=/root/uiw}"
echo "$(ts) c1: $(nvidia-smi -L 2>/dev/null | head -1); $(nproc) cores; $(free -g | awk '/Mem/{print $2}') GiB; $(python3 --version);" \
  "$(. /etc/os-release; echo "$PRETTY_NAME"); glibc $(ldd --version | head -1 | awk '{print $NF}'); ulimit -n $(ulimit -n)"
mkdir -p "$UIW" && cp "$G"/ui-wheels/*.whl "$UIW"/ && cp "$G/ui-pins.txt" "$UIW/pins.txt" || exit 1
WHEELS=$UIW PINS=$UIW/pins.txt setsid nohup bash "$G/bin/venv.sh" > "$W/venv.log" 2>&1 < /dev/null &
echo "page venv: building in the background (pid $!, $W/venv.log)"
bash "$G/bin/haproxy_setup.sh"
