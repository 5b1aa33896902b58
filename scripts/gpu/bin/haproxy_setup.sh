#!/bin/bash
# Unpack the carried Debian 12 HAProxy and its libraries into $HADIR (never /), and put a wrapper named
# haproxy in $HADIR/bin: the launcher starts HAProxy with PATH=/usr/bin:/bin only (balancer.py), so
# the wrapper sets LD_LIBRARY_PATH itself. Usage: source it (exports PATH) or run it.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mkdir -p "$HADIR/root" "$HADIR/bin"
for d in "$G"/deb/*.deb; do
  if command -v dpkg >/dev/null; then dpkg -x "$d" "$HADIR/root"
  else python3 - "$d" "$HADIR/root" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read(); pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/"); size = int(data[pos + 48:pos + 58])
    body = data[pos + 60:pos + 60 + size]; pos += 60 + size + (size & 1)
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
PY
  fi
done
L="$HADIR/root/usr/lib/x86_64-linux-gnu:$HADIR/root/lib/x86_64-linux-gnu"
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$L" "$HADIR/root/usr/sbin/haproxy" > "$HADIR/bin/haproxy"
chmod +x "$HADIR/bin/haproxy"
export PATH="$HADIR/bin:$PATH"
"$HADIR/bin/haproxy" -v | head -1 || { echo "haproxy_setup: HAProxy does not run"; LD_LIBRARY_PATH="$L" ldd "$HADIR/root/usr/sbin/haproxy" | grep 'not found'; false; }
