"""A fake OpenAI-compatible streaming server, for faults and shapes the embedded model can't produce.

SmolLM2-135M neither reasons in <think> tags nor writes script tags on demand, and a real server
cannot be made to hang mid-stream. This one answers according to a keyword in the last user message:
  THINK   inline "<think>...</think>answer", slowly, tags split across chunks
  FIELD   reasoning in delta.reasoning (a server run with --reasoning-parser), then the answer
  CUTOFF  reasoning that runs into the token limit (finish_reason "length"), no answer
  SCRIPT  an answer containing a <script> tag and an <img onerror> payload
  HANG    sends the first chunk, then nothing (for the idle timeout)
  SILENT  accepts the request and never sends a token (for the first-token timeout)
  DROP    sends part of an answer, then breaks the connection (a server dying mid-answer)
  SLOW    40 words of answer over about 10 s (a tab reloaded, or a second one opened, meanwhile)
  MARATHON  120 words of answer over about 30 s (time to open it elsewhere and press Stop there)
  PONDER  40 words of reasoning in delta.reasoning over about 10 s, then 8 words of answer (a chat
          opened elsewhere before anything of the answer is stored)
  LONGTHINK  20 words of reasoning in delta.reasoning, then the answer; with thinking_token_budget N
          the reasoning stops after N words, as vLLM's cap (with a reasoning parser) ends thinking
Run: python -m tests.fake_openai_server PORT [REQUEST_LOG]; with REQUEST_LOG, every request body
(and its X-Session-ID header) is appended there as one JSON line, for tests of what was sent.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

XSS = 'Here you go: <script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2"> done.'


def chunk(*, content: str | None = None, reasoning: str | None = None, finish: str | None = None) -> str:
    delta = {k: v for k, v in (("content", content), ("reasoning", reasoning)) if v is not None}
    body = {
        "id": "fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def script_for(text: str, budget: int | None = None) -> list[dict]:
    if "SLOW" in text:
        return [{"content": f"word{i} "} for i in range(1, 41)]
    if "MARATHON" in text:
        return [{"content": f"word{i} "} for i in range(1, 121)]
    if "PONDER" in text:
        return [{"reasoning": f"step{i} "} for i in range(1, 41)] + [{"content": f"word{i} "} for i in range(1, 9)]
    if "LONGTHINK" in text:
        words = [{"reasoning": f"step{i} "} for i in range(1, 21)]
        return words[:budget] + [{"content": "Done thinking: 42."}]
    if "FIELD" in text:
        return [{"reasoning": p} for p in ("Compare ", "tenths: ", "8 > 1.")] + [{"content": "9.8 is bigger."}]
    if "CUTOFF" in text:
        return [{"content": p} for p in ("<thi", "nk>Let me think ", "for a very ", "long time")] + [
            {"finish": "length"}
        ]
    if "SCRIPT" in text:
        return [{"content": XSS}]
    pieces = ["<th", "ink>9.8 is 9.80; ", "80 hundredths beat 11.", "</thi", "nk>\n\nThe bigger number is **9.8**."]
    return [{"content": p} for p in pieces]


REQUEST_LOG = sys.argv[2] if len(sys.argv) > 2 else ""


async def completions(request: Request):
    body = await request.json()
    if REQUEST_LOG:
        with open(REQUEST_LOG, "a") as log:
            log.write(json.dumps({**body, "x_session_id": request.headers.get("x-session-id")}) + "\n")
    text = body["messages"][-1]["content"]

    async def events():
        yield chunk(content="")
        if "SILENT" in text:
            await asyncio.sleep(3600)
        if "DROP" in text:
            yield chunk(content="Partial answer before the crash")
            await asyncio.sleep(2.5)  # longer than the save interval the tests use
            raise ConnectionAbortedError("the fake server dies mid-answer")
        if "HANG" in text:
            yield chunk(content="Starting to answer")
            await asyncio.sleep(3600)
        finish = "stop"
        for step in script_for(text, body.get("thinking_token_budget")):
            await asyncio.sleep(
                0.05 if "LONGTHINK" in text else 0.25 if any(k in text for k in ("SLOW", "PONDER", "MARATHON")) else 0.3
            )
            if "finish" in step:
                finish = step["finish"]
                continue
            yield chunk(**step)
        yield chunk(finish=finish)
        usage = {
            "id": "fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake",
            "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22},
        }
        if "FIELD" in text:  # as vLLM reports it when started with a reasoning parser
            usage["usage"]["completion_tokens_details"] = {"reasoning_tokens": 5}
        yield f"data: {json.dumps(usage)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def health(_request: Request):
    return JSONResponse({})


app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]), Route("/health", health)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
