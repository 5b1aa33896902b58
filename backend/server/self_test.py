"""A known-answer check of the model server right after /health, with a float32 fallback.

Why: /health only says the process is up, not that the model computes right (on an Intel Xeon with
AMX, bf16 was once reported to answer prompts over 32 tokens with word salad, and a CPU kernel fault
can depend on the prompt's length). So, once healthy, we ask the embedded model greedy questions
with a clear known answer at two prompt lengths over 32 tokens (PROMPTS says what "clear" means).
A wrong answer in a chosen dtype other than float32 relaunches vLLM in float32 (on an AMX CPU in
bf16, first in bf16 with oneDNN kept off AMX: cpu_host.py says why); a dtype the user set
(RCHAT_DTYPE) is kept, and the wrong answer is warned about instead.
The console and the chat page (through the launcher's status file) say which happened and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx

from backend.engine import cpu_host
from backend.engine.vllm_command import build_launch
from backend.server.supervisor import VLLMServer

# Two questions answered "The capital of France is Paris." in float32 and in every bf16 setup, each
# answer token well ahead of the next likeliest: a known answer must not hang on rounding, or a right
# setup is taken for a broken one (the plain "What is the capital of France?" is a near tie; the
# margins are in docs/benchmark.md, "near tie"). Two lengths, since a kernel fault can depend on it.
PROMPTS = (
    "Please answer in one short sentence: what is the capital of France?",
    "For a school project about European countries, I need to know the capital of France. What is it?",
)
EXPECTED = "paris"
MIN_PROMPT_TOKENS = 33  # the reported fault showed above 32 prompt tokens; a shorter test would prove nothing
ANSWER_TIMEOUT = 180.0  # a loaded 2-core machine can take a minute for the first answer
FALLBACK_DTYPE = "float32"


@dataclass(frozen=True)
class SelfTestResult:
    """One self-test: whether the answer was right, and in words what happened when it was not."""

    ok: bool
    answer: str = ""
    prompt_tokens: int = 0
    problem: str = ""


def ask(url: str, api_key: str, model: str, *, timeout: float = ANSWER_TIMEOUT) -> SelfTestResult:
    """Ask each of PROMPTS greedily; right when every answer names Paris (the first wrong one is the result)."""
    result = SelfTestResult(ok=False, problem="no test question")
    for prompt in PROMPTS:
        result = ask_one(url, api_key, model, prompt, timeout=timeout)
        if not result.ok or result.problem:
            return result
    return result


def ask_one(url: str, api_key: str, model: str, prompt: str, *, timeout: float = ANSWER_TIMEOUT) -> SelfTestResult:
    """One test question; right when the answer names Paris and the prompt was long enough to tell."""
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0, "max_tokens": 40}
    try:
        reply = httpx.post(
            f"{url}/v1/chat/completions", json=body, timeout=timeout, headers={"Authorization": f"Bearer {api_key}"}
        )
        reply.raise_for_status()
        data = reply.json()
        answer = data["choices"][0]["message"]["content"] or ""
        tokens = int(data.get("usage", {}).get("prompt_tokens", 0))
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        return SelfTestResult(ok=False, problem=f"the test question got no answer ({type(exc).__name__}: {exc})")
    if EXPECTED not in answer.lower():
        return SelfTestResult(
            ok=False,
            answer=answer,
            prompt_tokens=tokens,
            problem=f"asked the capital of France in a {tokens}-token prompt, it answered {answer[:80]!r}",
        )
    if tokens < MIN_PROMPT_TOKENS:
        return SelfTestResult(
            ok=True,
            answer=answer,
            prompt_tokens=tokens,
            problem=f"the prompt was only {tokens} tokens, too short to catch the long-prompt fault",
        )
    return SelfTestResult(ok=True, answer=answer, prompt_tokens=tokens)


def applies(server: VLLMServer) -> bool:
    """Only a server we launched, on the CPU, with the embedded model (the one whose answer we know)."""
    s = server.settings
    return not s.external and server.launch.device == "cpu" and s.uses_embedded_model


def amx_workaround_applies(server: VLLMServer) -> bool:
    """A wrong bf16 answer on an AMX CPU whose oneDNN used AMX (RCHAT_ONEDNN_AMX, on by default): first try
    bf16 with oneDNN kept off AMX, before float32."""
    flags, _model, _cpus = cpu_host.read_host()
    return server.launch.dtype == "bfloat16" and server.settings.onednn_amx and cpu_host.has_amx(flags)


def after_healthy(server: VLLMServer, *, say: Callable[[str], None]) -> tuple[str | None, str]:
    """The launcher's after-healthy check: (a reason to start vLLM again, or None; a warning for the page).

    On a wrong answer in a dtype we chose, the server's launch is switched to float32 and the reason
    returned: the launcher's supervision loop restarts it (it starts processes; this must not)."""
    if not applies(server):
        return None, ""
    dtype = server.launch.dtype or "the model's dtype"
    result = ask(server.url, server.api_key, server.settings.resolved_served_name)
    if result.ok:
        say(f"self-test passed in {dtype}: {result.answer.strip()[:60]!r}")
        return None, ""
    if not result.answer:  # no answer at all (an error, a timeout): not a wrong dtype; the page works on
        say(f"self-test could not run: {result.problem}")
        return None, ""
    if amx_workaround_applies(server):
        server.settings = server.settings.model_copy(update={"onednn_amx": False})
        server.launch = build_launch(server.settings, api_key=server.api_key)
        return (
            f"self-test failed in bfloat16 with oneDNN's AMX kernels ({result.problem}); "
            "starting it again with oneDNN kept off AMX"
        ), ""
    if server.settings.dtype != "auto" or server.launch.dtype == FALLBACK_DTYPE:
        warning = (
            f"The model's answers are probably wrong: the start-up self-test in {dtype} failed ({result.problem})."
        )
        if server.settings.dtype not in ("auto", FALLBACK_DTYPE):
            warning += " RCHAT_DTYPE is set; unset it to let the app choose, or set RCHAT_DTYPE=float32."
        say(f"warning: {warning}")
        return None, warning
    server.settings = server.settings.model_copy(update={"dtype": FALLBACK_DTYPE})
    server.launch = build_launch(server.settings, api_key=server.api_key)
    note = (
        f"The model runs in {FALLBACK_DTYPE} (slower) because in {dtype} it answered a test question "
        f"wrong at start-up ({result.problem})."
    )
    return f"self-test failed in {dtype} ({result.problem}); starting it in {FALLBACK_DTYPE}", note
