# Sourced by the device scripts and by preflight.sh; every path can be overridden from the environment.
G=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)   # the .gpu folder
REPO=$(cd "$G/.." && pwd)
: "${PYV:=/root/v/bin/python}"          # the page's venv (never with PYTHONPATH)
: "${VPY:=python3}"                     # vLLM's python (with /root/site, env.sh)
: "${HADIR:=/root/ha}"                  # HAProxy unpacked from the carried .debs
: "${W:=/root/w}"                       # logs and results
: "${VPORT:=8000}" "${UPORT:=7860}" "${FPORT:=8100}" "${KEY:=benchkey}"
: "${MODEL:=/root/models/smollm2-135m-instruct}"
: "${MAXTOK:=128}"
mkdir -p "$W"
ts() { date -u +%H:%M:%S; }
