"""What is stored and exported, through the page's real websocket, on the real SQLite file.

The real vLLM server for answers, stamps and resume; the fake server (tests/fake_openai_server.py)
only for a server that dies mid-answer, which vLLM cannot be made to do on cue without a restart.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from backend.bench.chainlit_client import ChainlitSession
from backend.qa.export import load_records
from backend.settings import PROJECT_ROOT
from tests.conftest import SharedServer, free_port
from tests.ui_harness import chainlit_app

QUESTION = "Which number is bigger, 9.11 or 9.8?"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("qa-data")


@pytest.fixture(scope="module")
def real_app(vllm_server: SharedServer, data_dir: Path, tmp_path_factory):
    env = {
        "RCHAT_VLLM_PORT": str(vllm_server.settings.vllm_port),
        "RCHAT_API_KEY": vllm_server.api_key,
        "RCHAT_DEFAULT_TEMPERATURE": "0",
        "RCHAT_DEFAULT_MAX_TOKENS": "200",
        "RCHAT_DATA_DIR": str(data_dir),
    }
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path_factory.mktemp("qa-ui"), env=env) as url:
        yield url


def export_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "backend", "export", *args],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={"RCHAT_DATA_DIR": str(data_dir), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.server
async def test_an_answer_is_stored_with_its_stamp_and_grade(
    real_app: str, data_dir: Path, vllm_server: SharedServer
) -> None:
    async with ChainlitSession(real_app) as session:
        await session.ask(QUESTION)
    records = [r for r in load_records(data_dir / "history.sqlite3") if r["question"] == QUESTION]
    assert len(records) == 1
    record = records[0]
    assert record["user"] == "local" and record["outcome"] == "complete" and record["answer"]
    stamp = record["stamp"]
    version = httpx.get(vllm_server.url_for("version"), headers={"Authorization": f"Bearer {vllm_server.api_key}"})
    assert stamp["vllm_version"] == version.json()["version"]
    assert stamp["served_model"] == "smollm2-135m-instruct" and stamp["model_path"].endswith("smollm2-135m-instruct")
    assert stamp["sampling"]["temperature"] == 0 and stamp["sampling"]["max_tokens"] == 200
    assert stamp["thinking"] is True and stamp["context_messages"] == 1
    assert isinstance(stamp["seed"], int) and stamp["seed_source"] == "drawn"  # empty panel seed: one drawn
    assert stamp["request"]["params"]["seed"] == stamp["seed"]  # and sent
    assert stamp["stats"]["completion_tokens"] > 0 and stamp["started_at"] <= stamp["finished_at"]
    # The starter question is in the answer key: the grade is stored (as "verdict"), whatever the model said.
    grade = record["verdict"]
    assert grade["expected"] == "9.8" and grade["outcome"] in ("correct", "incorrect", "unclear")
    assert "read" in grade  # the final answer as read (None when unclear)


@pytest.mark.server
async def test_a_resumed_chat_sends_the_earlier_turns_to_the_model(real_app: str, data_dir: Path) -> None:
    async with ChainlitSession(real_app) as session:
        await session.ask("Name a colour.")
        thread_id = session.thread_id
    async with ChainlitSession(real_app, thread_id=thread_id) as resumed:  # a new tab, from the sidebar
        await resumed.ask("And another one?")
    records = load_records(data_dir / "history.sqlite3", thread_id=thread_id)
    assert [r["question"] for r in records] == ["Name a colour.", "And another one?"]
    assert records[1]["stamp"]["context_messages"] == 3  # question, answer, follow-up


@pytest.mark.server
async def test_the_export_cli_writes_jsonl_and_markdown_and_explains_an_empty_result(
    real_app: str, data_dir: Path, tmp_path: Path
) -> None:
    async with ChainlitSession(real_app) as session:  # its own answer: no test relies on another's rows
        await session.ask(QUESTION)
    out = tmp_path / "all.jsonl"
    done = export_cli(data_dir, "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines and all(line["stamp"]["vllm_version"] for line in lines)
    markdown = export_cli(data_dir, "--format", "md").stdout
    assert f"### Q: {QUESTION}" in markdown and "vllm_version" in markdown
    none = export_cli(data_dir, "--human-verdicts")
    assert none.returncode == 1 and "no stored answers with a human verdict" in none.stderr and not none.stdout
    none = export_cli(data_dir, "--disagreements")
    assert none.returncode == 1 and "where the human verdict and the answer key disagree" in none.stderr
    empty = export_cli(tmp_path / "nothing-here")
    assert empty.returncode == 1 and "no history database" in empty.stderr.lower()


@pytest.fixture(scope="module")
def fake_app(fake_server_url: str, data_dir: Path, tmp_path_factory):
    env = {
        "RCHAT_BASE_URL": fake_server_url,
        "RCHAT_DATA_DIR": str(data_dir / "fake"),
        "RCHAT_PERSIST_INTERVAL": "0.5",
        "RCHAT_MAX_RETRIES": "0",
    }
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path_factory.mktemp("qa-fake"), env=env) as url:
        yield url


async def test_a_server_dying_mid_answer_leaves_question_and_partial_answer_stored(
    fake_app: str, data_dir: Path
) -> None:
    async with ChainlitSession(fake_app) as session:
        await session.ask("DROP please")
        shown = "".join(session.current.texts.values())
    assert "Partial answer before the crash" in shown and "broke in the middle of the answer" in shown
    [record] = load_records(data_dir / "fake" / "history.sqlite3")
    assert record["question"] == "DROP please"
    assert record["outcome"] == "interrupted" and record["answer"] == "Partial answer before the crash"
