"""Times a new user's first run: a fresh clone's `./start_service.sh` until the page says it is ready.

Twice by default: with empty caches (a new machine) and with warm ones (a second clone on the same
machine). The caches are uv's downloads and the user's cache ($XDG_CACHE_HOME: the converted
embedded model, see backend/server/embedded_model.py). Everything is built inside the clone (environments, the embedded model), nothing
is shared with this checkout. Prints a table and writes results/first-run-<time>.json.

    .venv/bin/python scripts/time_first_run.py [--caches empty,warm]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.server.processes import free_port, stop_group

STEP = re.compile(r"\[setup\] (.*)")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def first_run(cache: Path | None, *, empty: bool) -> dict:
    """One fresh clone's start; `cache`: a folder for uv's and the user's caches (None: this machine's own)."""
    with tempfile.TemporaryDirectory(prefix="rchat-first-run-") as tmp:
        app = Path(tmp) / "app"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(app)], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RCHAT_", "VIRTUAL_ENV"))}
        env.update(RCHAT_VLLM_PORT=str(free_port()), RCHAT_UI_PORT=str(free_port()))
        if cache is not None:
            env.update(UV_CACHE_DIR=str(cache / "uv"), XDG_CACHE_HOME=str(cache / "xdg"))
        if empty:
            env["PIP_NO_CACHE_DIR"] = "1"  # the uv bootstrap's pip, too
        started = time.monotonic()
        proc = subprocess.Popen([str(app / "start_service.sh")], cwd=app, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        marks: dict[str, float] = {}
        try:
            for line in proc.stdout:
                print("   ", line.rstrip(), flush=True)
                if (m := STEP.search(line)) is not None:
                    marks[m.group(1)[:70]] = round(time.monotonic() - started, 1)
                if "chat ready at" in line:
                    return {"cache": "empty" if empty else "warm", "ready_s": round(time.monotonic() - started, 1),
                            "steps_s": marks}
            return {"cache": "empty" if empty else "warm", "ready_s": None, "error": f"exited {proc.wait()}"}
        finally:
            stop_group(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--caches", default="empty,warm")
    kinds = parser.parse_args().caches.split(",")
    # Empty at first and warm for the second run; for "warm" alone, the machine's own caches.
    cache = Path(tempfile.mkdtemp(prefix="rchat-caches-")) if "empty" in kinds else None
    runs = [first_run(cache, empty=(kind == "empty")) for kind in kinds]
    result = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpu": cpu_model(), "cores": os.cpu_count(),
              "load_before": os.getloadavg()[0], "runs": runs}
    print("\n| caches | to a chat-ready page |\n|---|---|")
    for run in runs:
        print(f"| {run['cache']} | {run['ready_s']} s |")
    out = ROOT / "results" / f"first-run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"written: {out}")
    return 0 if all(r["ready_s"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
