"""The "before": plain transformers generate(), one request at a time, as a naive server would serve.

All `concurrency` requests arrive together and are served in turn, so later ones wait: their time to
first token includes the queue. Run with the server environment's Python (torch + transformers):
    .venv-vllm/bin/python -m backend.bench.hf_baseline MODEL_DIR PROMPT MAX_TOKENS C1,C2,... [DTYPE]
Prints one JSON object: {concurrency: {"records": [...], "wall_s": ...}}.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import asdict

from backend.bench.stats import StreamRecord


def _generate(model, tokenizer, prompt: str, max_tokens: int, sent_at: float) -> StreamRecord:
    from transformers import TextIteratorStreamer

    inputs = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    ).to(model.device)
    streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
    record = StreamRecord(sent_at=sent_at)
    out = {}

    def work() -> None:
        out["ids"] = model.generate(**inputs, max_new_tokens=max_tokens, do_sample=False, streamer=streamer)

    thread = threading.Thread(target=work)
    thread.start()
    for _text in streamer:
        record.arrivals.append(time.monotonic())
    thread.join()
    record.tokens = int(out["ids"].shape[1] - inputs["input_ids"].shape[1])
    return record


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir, prompt, max_tokens, levels = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    dtype = sys.argv[5] if len(sys.argv) > 5 else "auto"  # "auto": the model's own, as vLLM without --dtype
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype).to(device).eval()
    _generate(model, tokenizer, prompt, 8, time.monotonic())  # warm-up, not measured
    results = {}
    for concurrency in (int(c) for c in levels.split(",")):
        started = time.monotonic()
        records = [_generate(model, tokenizer, prompt, max_tokens, started) for _ in range(concurrency)]
        results[concurrency] = {"records": [asdict(r) for r in records], "wall_s": time.monotonic() - started}
        print(
            f"baseline: {concurrency} queued requests done in {results[concurrency]['wall_s']:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
