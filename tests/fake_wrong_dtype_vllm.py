"""A stand-in for `python -m vllm.entrypoints.openai.api_server` that answers wrong unless run in float32.

Why fake: a kernel fault (bf16 word salad was reported on an AMX CPU) can't be made on demand, and
the fallback must be tested on every host, the ones where bf16 answers right included. It takes
vLLM's argv (the supervisor's own command line, run through a `vllm_python` wrapper) and serves
/health and a non-streaming /v1/chat/completions: with `--dtype float32` it names Paris, with any
other dtype it answers word salad, unless oneDNN is kept off AMX (ONEDNN_MAX_CPU_ISA in its
environment) and FAKE_SALAD_EVEN_CAPPED is not set: so each step of the fallback can be walked.
Run: python -m tests.fake_wrong_dtype_vllm -m vllm.entrypoints.openai.api_server --port N --dtype D ...
"""

from __future__ import annotations

import argparse
import os
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

SALAD = "La capitale de la langue est le Parlement, le de la de la ville, tous les jours de France."


def make_app(dtype: str) -> Starlette:
    async def health(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("")

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        right = dtype == "float32" or (
            "ONEDNN_MAX_CPU_ISA" in os.environ and "FAKE_SALAD_EVEN_CAPPED" not in os.environ
        )
        answer = "The capital of France is Paris." if right else SALAD
        return JSONResponse(
            {
                "id": "fake",
                "object": "chat.completion",
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(prompt.split()) + 10, "completion_tokens": 9},
            }
        )

    return Starlette(routes=[Route("/health", health), Route("/v1/chat/completions", chat, methods=["POST"])])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-m")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dtype", default="auto")
    args, _rest = parser.parse_known_args(argv)
    print(f"fake vLLM: dtype {args.dtype}", flush=True)
    uvicorn.run(make_app(args.dtype), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
