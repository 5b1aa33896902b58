"""A stand-in for vLLM or the chat page in the supervision tests, scripted start by start.

Why a fake: a real vLLM cannot be made, on cue and within seconds, to hang before it is ready, to
exit during start-up, or to fail several restarts in a row. These tests are about the launcher's
decisions; tests/test_start_service.py checks the same paths end to end with the real vLLM.

    python tests/fake_child.py PORT SCRIPT

Each start takes the first line of the file SCRIPT and removes it (no line left: serve):
    serve     answer 200 to every GET on 127.0.0.1:PORT, until killed
    exit N    exit with code N after 0.2 s, without listening
    hang      never listen; sleep until killed
"""

from __future__ import annotations

import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # http.server's name for it
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *_args: object) -> None:
        pass


def next_step(script: Path) -> str:
    lines = script.read_text().splitlines() if script.exists() else []
    script.write_text("".join(line + "\n" for line in lines[1:]))
    return lines[0].strip() if lines else "serve"


def main() -> None:
    port, script = int(sys.argv[1]), Path(sys.argv[2])
    step = next_step(script)
    print(f"fake child: {step}", flush=True)
    if step.startswith("exit"):
        time.sleep(0.2)
        sys.exit(int(step.split()[1]))
    if step == "hang":
        while True:
            time.sleep(60)
    ThreadingHTTPServer(("127.0.0.1", port), Ok).serve_forever()


if __name__ == "__main__":
    main()
