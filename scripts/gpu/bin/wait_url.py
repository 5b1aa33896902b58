"""wait_url.py URL TIMEOUT [WATCH_PID]: exit 0 once URL answers 200; 1 on timeout; 3 as soon as WATCH_PID
has exited (a zombie counts as exited: kill(pid, 0) alone would miss a child that died but is not reaped)."""

import sys
import time
import urllib.request

url, timeout = sys.argv[1], float(sys.argv[2])
pid = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else None


def alive(p):
    try:
        with open(f"/proc/{p}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


start = time.monotonic()
while time.monotonic() - start < timeout:
    if pid is not None and not alive(pid):
        print(f"wait_url: pid {pid} exited after {time.monotonic() - start:.0f} s, {url} never answered", flush=True)
        sys.exit(3)
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            if r.status == 200:
                print(f"wait_url: {url} up after {time.monotonic() - start:.1f} s", flush=True)
                sys.exit(0)
    except OSError:  # refused, reset, timed out, HTTP errors: not up yet
        pass
    time.sleep(0.5)
print(f"wait_url: {url} not up after {timeout:.0f} s", flush=True)
sys.exit(1)
