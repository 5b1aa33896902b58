"""`python -m backend qa run` against the real vLLM server: what it prints, writes and stores.

The run's chat is then read the ways a QA user meets it: through Chainlit's own data layer (what the
sidebar and a resume call), through export, and in real Chromium, where a verdict is set on one of
its answers.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from chainlit.types import Pagination, ThreadFilter

from backend.answers.grading.question_set import QUESTIONS_FILE
from backend.chat.conversation import Conversation
from backend.page.history_layer import SqliteHistoryLayer
from backend.qa.export import load_records
from backend.settings import PROJECT_ROOT
from tests.conftest import SharedServer, ctrl_c_as_in_a_terminal, free_port
from tests.harness_cli import qa_run_argv, qa_run_cli
from tests.ui_harness import browser_page, chainlit_app, shot, wait_for

pytestmark = [pytest.mark.server]
SAMPLES, MAX_TOKENS = 2, 24
LIMITED = ("--max-tokens", str(MAX_TOKENS))  # every run here: short answers


def three_questions(folder: Path) -> tuple[Path, list[dict]]:
    """The first three keyed questions, copied as they are (whatever fields the key has today)."""
    data = json.loads(QUESTIONS_FILE.read_text())
    data["questions"] = data["questions"][:3]
    path = folder / "three.json"
    path.write_text(json.dumps(data))
    return path, data["questions"]


def qa_env(server: SharedServer, data: Path) -> dict[str, str]:
    return {
        "RCHAT_VLLM_PORT": str(server.settings.vllm_port),
        "RCHAT_API_KEY": server.api_key,
        "RCHAT_DATA_DIR": str(data),
        "PATH": "/usr/bin:/bin",
    }


@pytest.fixture(scope="module")
def run(vllm_server: SharedServer, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("qa-run")
    questions_file, questions = three_questions(folder)
    env = qa_env(vllm_server, folder / "data")
    done = qa_run_cli(env, questions_file, folder / "results", *LIMITED, samples=SAMPLES, timeout=800)
    return {
        "done": done,
        "questions": questions,
        "folder": folder,
        "env": env,
        "db": folder / "data" / "history.sqlite3",
    }


def test_the_run_prints_progress_and_an_accuracy_table_and_writes_json_and_a_chart(run: dict) -> None:
    done, ids = run["done"], [q["id"] for q in run["questions"]]
    assert done.returncode == 0, done.stderr + done.stdout
    total = len(ids) * SAMPLES
    assert len(re.findall(rf"^\[\s*\d+/{total}\] ", done.stdout, re.MULTILINE)) == total
    table = done.stdout.split("95% interval")[1]
    assert all(
        re.search(rf"^{re.escape(i)}\s+{SAMPLES}\s+\d+\s+\d+\s+\d+\s+\d+%\s+\d+% - \d+%", table, re.MULTILINE)
        for i in ids
    )
    assert "majority vote: right on" in done.stdout
    [json_file] = (run["folder"] / "results").glob("qa-run-*.json")
    report = json.loads(json_file.read_text())
    assert [q["question_id"] for q in report["questions"]] == ids
    assert all(q["samples"] == SAMPLES and 0 <= q["ci95"][0] <= q["ci95"][1] <= 1 for q in report["questions"])
    assert report["overall"]["graded"] == total and report["sampling"]["max_tokens"] == MAX_TOKENS
    assert json_file.with_suffix(".png").stat().st_size > 5000  # the chart (matplotlib is in the test env)


def test_every_answer_is_stored_in_one_chat_that_export_reads(run: dict, vllm_server: SharedServer) -> None:
    thread_id = json.loads(next((run["folder"] / "results").glob("qa-run-*.json")).read_text())["thread_id"]
    records = load_records(run["db"], thread_id=thread_id)
    version = httpx.get(vllm_server.url_for("version"), headers={"Authorization": f"Bearer {vllm_server.api_key}"})
    version = version.json()["version"]
    expected = {q["question"]: q["expected"] for q in run["questions"]}
    assert sorted((r["question"], r["sample"]) for r in records) == sorted(
        (q, s) for q in expected for s in range(1, SAMPLES + 1)
    )
    assert load_records(run["db"]) == records  # the run made one chat, nothing else
    for r in records:
        assert r["user"] == "local" and r["thread_name"].startswith("Accuracy run") and r["outcome"] == "complete"
        assert r["stamp"]["vllm_version"] == version
        assert r["stamp"]["sampling"]["max_tokens"] == MAX_TOKENS and r["stamp"]["served_model"]
        assert r["verdict"]["expected"] == expected[r["question"]] and r["verdict"]["outcome"]
        assert r["answer"] and r["answer"] in r["shown"]


async def test_the_run_is_in_the_users_sidebar_and_resumes_as_a_conversation(run: dict) -> None:
    store = SqliteHistoryLayer(run["db"])
    user = await store.get_user("local")
    listed = await store.list_threads(Pagination(first=20), ThreadFilter(userId=user.id))
    [thread] = listed.data
    assert thread["name"].startswith("Accuracy run")
    resumed = Conversation.from_steps((await store.get_thread(thread["id"]))["steps"])
    # Every question, each followed by (the latest of) its answers, as a regenerated chat resumes.
    assert [t.role for t in resumed.turns] == ["user", "assistant"] * len(run["questions"])
    await store.close()


def test_ctrl_c_stops_the_run_and_keeps_what_was_stored(vllm_server: SharedServer, tmp_path: Path) -> None:
    questions_file, _ = three_questions(tmp_path)
    env = qa_env(vllm_server, tmp_path / "data")
    proc = subprocess.Popen(
        qa_run_argv(questions_file, tmp_path / "results", *LIMITED, "--parallel", "1", samples=SAMPLES),
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    lines = []
    for line in proc.stdout:  # wait for two answers, then press Ctrl-C during the third
        lines.append(line)
        if len([x for x in lines if x.startswith("[")]) == 2:
            proc.send_signal(signal.SIGINT)
            break
    out = "".join(lines) + proc.stdout.read()
    assert proc.wait(timeout=120) == 130, out
    stored = int(re.search(r"Stopped by Ctrl-C\. The (\d+) answer\(s\) given so far are stored", out).group(1))
    records = load_records(tmp_path / "data" / "history.sqlite3")
    assert len(records) == stored >= 2
    assert [r["outcome"] for r in records][:2] == ["complete", "complete"]
    assert all(r["outcome"] in ("complete", "stopped") for r in records)
    assert list((tmp_path / "results").glob("qa-run-*.json"))  # the summary of what was done


@pytest.mark.browser
def test_a_verdict_can_be_set_on_a_run_answer_in_the_page(run: dict, tmp_path: Path) -> None:
    with chainlit_app(ui_port=free_port(), log_dir=tmp_path, env=run["env"]) as url, browser_page(url) as page:
        page.locator("#thread-history").get_by_text("Accuracy run").first.click(timeout=30_000)
        page.wait_for_url("**/thread/**", timeout=30_000)
        wait_for(lambda: page.locator(".negative-feedback-off").count() == len(run["questions"]) * SAMPLES)
        page.locator(".negative-feedback-off").first.click()
        page.get_by_placeholder("Why is it right or wrong?").fill("checked by hand")
        page.locator("#submit-feedback").click()
        wait_for(lambda: any(r["human_verdict"] for r in load_records(run["db"])))
        page.screenshot(path=str(shot("qa-run-thread")), full_page=True)
    [judged] = [r for r in load_records(run["db"]) if r["human_verdict"]]
    assert judged["human_verdict"] == {"verdict": "wrong", "comment": "checked by hand"}
    assert judged["sample"] == 1 and judged["question"] == run["questions"][0]["question"]
    assert judged["agreement"] == ("agree" if judged["verdict"]["outcome"] == "incorrect" else "disagree")
