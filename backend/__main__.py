"""Command line: `python -m backend {run,serve,start,stop,status,check}`.

run     vLLM + chat UI in the foreground (what start_service.sh runs)
serve   vLLM only, in the foreground, until Ctrl-C
start   vLLM only, in the background; returns once /health answers
stop    stop what `start` started
status  is the server up, what does it serve, how busy is it
check   validate settings and print the vLLM command line, start nothing
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time

import httpx

from backend.settings import PROJECT_ROOT, Settings, SettingsError, load_settings
from backend.status import read_status
from backend.vllm_command import build_launch


def _pidfile(settings: Settings):
    return settings.log_dir / f"serve-{settings.vllm_port}.pid"


def cmd_check(settings: Settings) -> int:
    spec = build_launch(settings, api_key="<hidden>")
    print(f"settings OK; device {spec.device}; vLLM command:")
    print("  " + shlex.join(spec.argv))
    return 0


def cmd_start(settings: Settings) -> int:
    """Spawn `serve` detached (its own session, so this shell may exit) and wait until healthy."""
    pidfile = _pidfile(settings)
    log = settings.log_dir / f"serve-{settings.vllm_port}.out"
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "backend", "serve"], cwd=PROJECT_ROOT,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    pidfile.write_text(str(proc.pid))
    while proc.poll() is None:
        if _healthy(settings):
            print(f"vLLM is up at {settings.server_url} (pid {proc.pid}); `python -m backend stop` stops it")
            return 0
        time.sleep(1)
    pidfile.unlink(missing_ok=True)
    print(f"vLLM did not start:\n{log.read_text()[-3000:]}", file=sys.stderr)
    return 1


def cmd_stop(settings: Settings) -> int:
    pidfile = _pidfile(settings)
    try:
        pid = int(pidfile.read_text())
    except (OSError, ValueError):
        print("nothing to stop: no server was started with `python -m backend start`")
        return 0
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    for _ in range(300):  # the serve process stops vLLM's whole group, then exits
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    pidfile.unlink(missing_ok=True)
    print("stopped")
    return 0


def _healthy(settings: Settings) -> bool:
    try:
        return httpx.get(f"{settings.server_url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def cmd_status(settings: Settings) -> int:
    report: dict[str, object] = {"url": settings.server_url, "healthy": _healthy(settings)}
    published = read_status(settings.status_file)
    if published:
        report["launcher"] = published.describe()
    if report["healthy"]:
        try:
            report["version"] = httpx.get(f"{settings.server_url}/version", timeout=2).json().get("version")
        except (httpx.HTTPError, ValueError):
            pass
    print(json.dumps(report, indent=2))
    return 0 if report["healthy"] else 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m backend", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="run",
                        choices=["run", "serve", "start", "stop", "status", "check"])
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command in ("run", "serve"):
        from backend.launcher import run

        return run(settings, with_ui=args.command == "run")
    return {"check": cmd_check, "start": cmd_start, "stop": cmd_stop, "status": cmd_status}[args.command](settings)


if __name__ == "__main__":
    sys.exit(main())
