"""A stand-in for `python -m vllm.entrypoints.openai.api_server` that starts only when a test says so.

Why fake: a real vLLM can't be held in its compile phase on cue, and the page's behaviour during a
start (it serves, says which phase, answers what was asked meanwhile once ready) must be tested
without minutes of compiling. It takes vLLM's argv (run through a `vllm_python` wrapper, as
tests/fake_wrong_dtype_vllm.py is), writes vLLM's own start-up log lines up to the compile phase,
then waits until the file named by FAKE_VLLM_GO exists before it listens. Once up it answers the
self-test's plain question ("The capital of France is Paris.") and streams like
tests/fake_openai_server.py.
Run: python -m tests.fake_slow_vllm -m vllm.entrypoints.openai.api_server --port N ...
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from tests import fake_openai_server

# vLLM's own log lines, one per phase the launcher reads (backend/server/supervisor.PHASES).
START_LINES = (
    "INFO [api_utils.py:286] non-default args: {}",
    "INFO [model.py:733] Resolved architecture: LlamaForCausalLM",
    "INFO [cpu_model_runner.py:68] Starting to load model fake...",
    "INFO [default_loader.py:501] Loading weights took 0.01 seconds",
    "INFO [cpu_model_runner.py:87] Warming up model for the compilation...",
)


async def health(_request: Request) -> PlainTextResponse:
    return PlainTextResponse("")


async def chat(request: Request):
    body = await request.json()
    if body.get("stream"):
        return await fake_openai_server.completions(request)
    return JSONResponse(
        {
            "id": "fake",
            "object": "chat.completion",
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "The capital of France is Paris."},
                }
            ],
            "usage": {"prompt_tokens": 44, "completion_tokens": 8},
        }
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-m")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args, _rest = parser.parse_known_args(argv)
    fake_openai_server.REQUEST_LOG = ""  # it read our argv (vLLM's) as its own at import
    for line in START_LINES:
        print(line, flush=True)
    go = Path(os.environ["FAKE_VLLM_GO"])
    while not go.exists():
        time.sleep(0.1)
    print("INFO [kv_cache_utils.py:2327] CPU KV cache size: 1 tokens", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    app = Starlette(routes=[Route("/health", health), Route("/v1/chat/completions", chat, methods=["POST"])])
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
