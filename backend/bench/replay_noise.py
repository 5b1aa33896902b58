"""How often a seeded replay differs from its first answer, alone and with other requests running.

    python -m backend.bench.replay_noise                    # 20 trials alone, 20 beside 8 others
    python -m backend.bench.replay_noise --trials 5 --others 8 --temperature 0.7

One seeded request (same messages, temperature, seed) is sent once alone for the reference, then
`--trials` times alone and `--trials` times while `--others` requests (other prompts and lengths)
are being decoded. Each trial's answer is compared with the reference, word for word. vLLM batches
concurrent requests into the same matrix products, so their floating-point sums can be ordered
differently: a seed fixes the random draws, not the logits they are drawn from.

Starts its own managed vLLM unless --url names a running server. Prints a table and writes
results/replay-noise-<stamp>.json with the date, CPU model, dtype and every answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

from backend.engine.launch_facts import cpu_facts
from backend.engine.vllm_command import resolve_device
from backend.server.processes import free_ports
from backend.server.supervisor import VLLMServer
from backend.settings import PROJECT_ROOT, load_settings

PROMPT = "Write a short story about a robot who learns to paint. Make it vivid."
OTHER_PROMPTS = [
    "Explain photosynthesis to a child.",
    "List five uses of a paperclip.",
    "What is the capital of France? Answer in one sentence, then say why it is famous.",
    "Write a haiku about rain.",
    "Describe the water cycle in detail, step by step.",
    "Give me three tips for learning to cook.",
    "Why is the sky blue?",
    "Tell me a joke about computers, then explain it.",
]


def say(text: str) -> None:
    print(f"[replay-noise] {text}", file=sys.stderr, flush=True)


async def ask(client, model: str, prompt: str, *, max_tokens: int, temperature: float, seed: int | None) -> str:
    response = await client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=0.9,
        seed=seed,
    )
    return response.choices[0].message.content or ""


async def trial(client, model: str, args: argparse.Namespace, *, others: int) -> str:
    """One seeded answer; with `others`, sent while that many other requests are being decoded."""
    background = [
        asyncio.create_task(
            ask(
                client,
                model,
                OTHER_PROMPTS[i % len(OTHER_PROMPTS)],
                max_tokens=args.max_tokens + 16 * (i % 3),
                temperature=0.8,
                seed=None,
            )
        )
        for i in range(others)
    ]
    if background:
        await asyncio.sleep(args.stagger)  # the others are in the running batch, prefilled or decoding
    answer = await ask(client, model, PROMPT, max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed)
    await asyncio.gather(*background)
    return answer


def tally(reference: str, runs: dict[str, list[str]]) -> dict:
    return {
        "reference": reference,
        "runs": runs,
        "differ": {k: sum(a != reference for a in v) for k, v in runs.items()},
        "distinct": {k: len(set(v)) for k, v in runs.items()},
    }


async def measure(url: str, key: str, model: str, args: argparse.Namespace, save) -> dict:
    import httpx
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, http_client=httpx.AsyncClient(timeout=600))
    reference = await trial(client, model, args, others=0)
    runs: dict[str, list[str]] = {"alone": [], f"with {args.others} others": []}
    for i in range(args.trials):
        for label, others in (("alone", 0), (f"with {args.others} others", args.others)):
            runs[label].append(await trial(client, model, args, others=others))  # interleaved: same drift
        say(
            f"trial {i + 1}/{args.trials}: "
            + ", ".join(f"{k} {sum(a != reference for a in v)} differ" for k, v in runs.items())
        )
        save(tally(reference, runs))  # a long run cut short still leaves its trials on disk
    await client.close()
    return tally(reference, runs)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m backend.bench.replay_noise",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--others", type=int, default=8, help="concurrent other requests in the busy trials")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--stagger", type=float, default=0.5, help="seconds the others run before the replay is sent")
    p.add_argument("--url", default="", help="measure this running server instead of starting one")
    p.add_argument("--api-key", default="")
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "results")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    vllm_port, ui_port = free_ports(2)
    settings = load_settings(vllm_port=vllm_port, ui_port=ui_port)
    device = resolve_device(settings)
    with ExitStack() as stack:
        if args.url:
            url, key = args.url.rstrip("/"), args.api_key
            dtype = "unknown (a server given by --url)"
        else:
            say("starting the managed vLLM server")
            server = stack.enter_context(VLLMServer(settings, log_path=Path(tempfile.mkdtemp()) / "vllm.log"))
            url, key = server.url, server.api_key
            dtype = server.launch.dtype or "auto"  # what it was launched with (the CPU's choice included)
        started = time.monotonic()
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"replay-noise-{datetime.now():%Y%m%d-%H%M%S}.json"
        facts = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            **cpu_facts(),
            "device": device,
            "dtype": dtype,
            "settings": {k: v for k, v in vars(args).items() if k not in ("api_key", "out")},
        }

        def save(result: dict) -> None:
            result.update(facts, wall_s=round(time.monotonic() - started, 1))
            path.write_text(json.dumps(result, indent=2, ensure_ascii=False))

        result = asyncio.run(measure(url, key, settings.resolved_served_name, args, save))
        save(result)
    print(f"\n{'condition':<22}{'trials':>8}{'differ':>8}{'distinct answers':>18}")
    for label, answers in result["runs"].items():
        print(f"{label:<22}{len(answers):>8}{result['differ'][label]:>8}{result['distinct'][label]:>18}")
    print(
        f"({result['cpu']}, {device}, dtype {result['dtype']}, temperature {args.temperature}, "
        f"seed {args.seed}, {args.max_tokens} tokens)"
    )
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
