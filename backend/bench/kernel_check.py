"""Do a server's kernels compute right at every prompt length? Its greedy continuations, scored by float32.

    python -m backend.bench.kernel_check --variants today,defaults,bf16-capped --lengths 2-160

Why: a CPU kernel fault can show at some prompt lengths only (bf16 on an AMX host was reported to
garble prompts over 32 tokens), and a greedy answer compared by eye tells little: bf16 drifts from
float32 the way any lower precision does, and a near tie flips with rounding (on 2026-12-06 the
37-token "What is the capital of France?" was one, taken for a fault the day before). The first variant
(float32: `today`) is the reference and stays up. For every length in `--lengths`, each variant
continues the same real text cut at that length (greedy, 8 tokens, one request at a time: CONCURRENCY
says why), and the reference scores that continuation: its mean log-probability
per token under float32 (prompt_logprobs, teacher-forced). A right bf16 picks tokens float32 finds
likely too, a few hundredths of a nat below float32's own choice; a garbling kernel's tokens are
whole nats less likely. (Continuations, not the prompt's own scores: a fault in the decode that
follows a prefill would not show in those.) Then the
39 questions of backend/answers/grading/questions.json are answered greedily (48 tokens, 16 at once) and their
first words compared with the reference's. The text is the question set's own questions, one
after another: real prompts, not random tokens. Prints a table, writes results/kernel-check-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx

from backend.answers.grading.question_set import QUESTIONS_FILE
from backend.bench.cpu_variants import say, variants
from backend.engine import cpu_host
from backend.server.processes import free_ports
from backend.server.supervisor import VLLMServer
from backend.settings import PROJECT_ROOT, Settings, load_settings

QUESTIONS = QUESTIONS_FILE  # the answer key's questions
CONTINUE_TOKENS = 8
# One request at a time, as one user asks and as the self-test does; 8 at once (shared batches) found
# the same on 2026-12-06.
CONCURRENCY = 1
OFF_NATS = 1.0  # a continuation this much less likely per token under float32 than float32's own is wrong


def question_texts() -> list[str]:
    return [q["question"] for q in json.loads(QUESTIONS.read_text())["questions"]]


def _lengths(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


class Server:
    """One running variant: a client for its OpenAI API, and the dtype it runs in."""

    def __init__(self, url: str, api_key: str, model: str, dtype: str) -> None:
        self.url, self.model, self.dtype = url, model, dtype
        self.client = httpx.Client(headers={"Authorization": f"Bearer {api_key}"}, timeout=300)

    def post(self, path: str, body: dict) -> dict:
        reply = self.client.post(f"{self.url}{path}", json={"model": self.model, **body})
        reply.raise_for_status()
        return reply.json()

    def continuation(self, prompt: list[int]) -> list[int]:
        data = self.post(
            "/v1/completions",
            {"prompt": prompt, "max_tokens": CONTINUE_TOKENS, "temperature": 0, "return_token_ids": True},
        )
        return data["choices"][0]["token_ids"]

    def score(self, prompt: list[int], continuation: list[int]) -> float:
        """Mean log-probability per token of `continuation` after `prompt`, teacher-forced."""
        data = self.post(
            "/v1/completions",
            {"prompt": prompt + continuation, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 0},
        )
        picked = data["choices"][0]["prompt_logprobs"][len(prompt) :]
        return sum(d[str(t)]["logprob"] for d, t in zip(picked, continuation, strict=True)) / len(continuation)

    def answers(self, questions: list[str]) -> list[str]:
        def one(q: str) -> str:
            data = self.post(
                "/v1/chat/completions",
                {"temperature": 0, "max_tokens": 48, "messages": [{"role": "user", "content": q}]},
            )
            return data["choices"][0]["message"]["content"] or ""

        return _parallel(one, questions, 16)


def _parallel(fn, items: list, workers: int = 1) -> list:
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


@contextmanager
def running(name: str, settings: Settings) -> Iterator[Server]:
    spec = variants(settings)[name]()
    log = Path(tempfile.mkdtemp()) / f"vllm-{name}.log"
    with VLLMServer(settings, launch=spec, log_path=log) as server:
        say(f"{name}: healthy after {server.ready_after:.0f} s (log {log})")
        client = Server(server.url, server.api_key, settings.resolved_served_name, spec.dtype)
        try:
            yield client
        finally:
            client.client.close()


def measure(server: Server, ref: Server, prompts: list[list[int]]) -> dict:
    """A server's continuations and answers, its continuations scored by the reference (itself, for the reference)."""
    continuations = _parallel(server.continuation, prompts, CONCURRENCY)
    answers = server.answers(question_texts())
    scores = _parallel(lambda pc: ref.score(*pc), list(zip(prompts, continuations, strict=True)))
    return {"dtype": server.dtype, "continuations": continuations, "scores": scores, "answers": answers}


def check_variant(name: str, settings: Settings, ref: Server, prompts: list[list[int]]) -> dict:
    with running(name, settings) as server:
        result = measure(server, ref, prompts)
    say(f"{name}: {len(prompts)} continuations scored, {len(result['answers'])} answers")
    return result


def compare(names: list[str], results: dict, lengths: list[int]) -> list[dict]:
    """Each variant against the reference (the first): how much less likely its continuations are, where."""
    ref = results[names[0]]
    rows = []
    for name in names:
        got = results[name]
        gaps = [r - g for r, g in zip(ref["scores"], got["scores"], strict=True)]
        off = [n for n, gap in zip(lengths, gaps, strict=True) if gap > OFF_NATS]
        first = sum(a[:1] == b[:1] for a, b in zip(got["continuations"], ref["continuations"], strict=True))
        words = sum(a.split()[:3] == b.split()[:3] for a, b in zip(got["answers"], ref["answers"], strict=True))
        rows.append(
            {
                "variant": name,
                "dtype": got["dtype"],
                "lengths": len(lengths),
                "median_gap": round(sorted(gaps)[len(gaps) // 2], 3),
                "worst_gap": round(max(gaps), 2),
                "off_lengths": off,
                "first_token_alike": first,
                "first_words_alike": words,
                "questions": len(got["answers"]),
            }
        )
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        (
            "| variant | dtype | continuation log-prob below float32's (median / worst, nats/token) | "
            f"lengths off by > {OFF_NATS} | first token as float32 | answers' first 3 words as float32 |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        off = (", ".join(map(str, r["off_lengths"][:12])) + (" ..." if len(r["off_lengths"]) > 12 else "")) or "none"
        lines.append(
            f"| {r['variant']} | {r['dtype']} | {r['median_gap']} / {r['worst_gap']} | "
            f"{len(r['off_lengths'])} of {r['lengths']}: {off} | {r['first_token_alike']} of {r['lengths']} | "
            f"{r['first_words_alike']} of {r['questions']} |"
        )
    return "\n".join(lines)


def run(names: list[str], lengths: list[int], vllm_ports: list[int], ui_port: int) -> dict:
    """The reference up first and throughout; each other variant beside it, one at a time."""
    ref_settings, settings = (load_settings(vllm_port=p, ui_port=ui_port, device="cpu") for p in vllm_ports)
    results = {}
    with running(names[0], ref_settings) as ref:
        tokens = ref.post("/tokenize", {"prompt": " ".join(question_texts())})["tokens"]
        prompts = [tokens[:n] for n in lengths if n <= len(tokens)]
        results[names[0]] = measure(ref, ref, prompts)
        for name in names[1:]:
            results[name] = check_variant(name, settings, ref, prompts)
    return {"lengths": [len(p) for p in prompts], "variants": results}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m backend.bench.kernel_check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--variants", default="today,defaults", help="the first is the reference (float32: today)")
    p.add_argument("--lengths", type=_lengths, default=_lengths("2-160"), help="prompt lengths, as LOW-HIGH")
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "results")
    args = p.parse_args(argv)
    *vllm_ports, ui_port = free_ports(3)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    known = variants(load_settings(vllm_port=vllm_ports[0], ui_port=ui_port, device="cpu"))
    if unknown := [n for n in names if n not in known]:
        p.error(f"unknown variants {unknown}; known: {', '.join(known)}")
    results = run(names, args.lengths, vllm_ports, ui_port)
    rows = compare(names, results["variants"], results["lengths"])
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"kernel-check-{stamp}.json"
    path.write_text(json.dumps({"meta": {"date": stamp, "cpu": cpu_host.read_host()[1]}, "rows": rows, **results}))
    print(table(rows))
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
