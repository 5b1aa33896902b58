"""Ask every keyed question of the embedded model at several temperatures; write the answers, unlabelled.

The labelled corpus tests/data/graded_answers.jsonl was made from this script's output by reading every
answer and labelling it by hand (see docs/grading.md). Usage, from the repository root:

    .venv/bin/python scripts/collect_model_answers.py OUT.jsonl [--temperatures 0 0.3 0.7 1.0] [--seed 1]
        [--url http://127.0.0.1:PORT --api-key KEY]

Without --url it starts its own vLLM server on a free port (the settings' model and dtype) and stops it
at the end. Each answer is appended to OUT as it arrives, so an interrupted run keeps what it got.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.answers.grading.question_set import Question, load_questions
from backend.chat.reasoning import ThinkTagParser
from backend.server.processes import free_port
from backend.server.supervisor import VLLMServer
from backend.settings import load_settings


def split_reasoning(content: str) -> tuple[str, str]:
    """(reasoning, answer) as the page would show them (reasoning inside <think> tags, if any)."""
    parser = ThinkTagParser()
    segments = parser.feed(content) + parser.finish()
    reasoning = "".join(s.text for s in segments if s.kind == "reasoning")
    return reasoning, "".join(s.text for s in segments if s.kind != "reasoning")


async def ask(client, model: str, q: Question, temperature: float, seed: int, max_tokens: int) -> dict:
    reply = await client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": q.question}],
        temperature=temperature,
        top_p=1.0,
        max_tokens=max_tokens,
        seed=seed,
    )
    reasoning, answer = split_reasoning(reply.choices[0].message.content or "")
    return {
        "question_id": q.id,
        "question": q.question,
        "reasoning": reasoning,
        "answer": answer,
        "finish_reason": reply.choices[0].finish_reason,
        "source": f"{model} temperature={temperature} seed={seed} max_tokens={max_tokens}",
    }


async def collect(client, model: str, args: argparse.Namespace) -> int:
    limit = asyncio.Semaphore(args.concurrency)
    done = 0

    async def one(q: Question, t: float) -> None:
        nonlocal done
        async with limit:
            row = await ask(client, model, q, t, args.seed, args.max_tokens)
        with args.out.open("a") as out:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        done += 1
        print(f"{done} answers", flush=True)

    # Rounds over all questions, each at a different temperature in each round, so that an interrupted
    # run still has every question, at several temperatures.
    temps, questions = args.temperatures, load_questions()
    await asyncio.gather(
        *(one(q, temps[(i + r) % len(temps)]) for r in range(len(temps)) for i, q in enumerate(questions))
    )
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 0.3, 0.7, 1.0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--url", help="a running OpenAI-compatible server (default: start one)")
    parser.add_argument("--api-key", default="none")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="served model name, with --url")
    args = parser.parse_args()
    if args.url:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=f"{args.url}/v1", api_key=args.api_key, max_retries=0, timeout=3600)
        done = asyncio.run(collect(client, args.model, args))
    else:
        settings = load_settings(_env_file=None, vllm_port=free_port(), ui_port=free_port(), log_dir=args.out.parent)
        with VLLMServer(settings) as server:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(base_url=server.url_for("v1"), api_key=server.api_key, max_retries=0, timeout=3600)
            done = asyncio.run(collect(client, settings.resolved_served_name, args))
    print(f"{done} answers appended to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
