"""`python -m backend qa run`: one accuracy run against the served model, from options to summary.

Prints a line per answer as it ends, then the accuracy table; writes the JSON and the chart next to
the benchmark's results. Ctrl-C stops at once: the answers already stored stay stored (the one in
progress is stored as stopped) and the summary covers them.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import openai

from backend.answers.grading.question_set import QUESTIONS_FILE, Question, load_questions
from backend.answers.stamp import now_iso
from backend.chat.client import make_client
from backend.chat.health import is_healthy
from backend.chat.sampling import Sampling, apply_update, default_sampling
from backend.engine.facts import engine_facts
from backend.errors import BackendRejected, ChatAppError, HistoryUnavailable
from backend.qa.accounts import LOCAL_USER
from backend.qa.accuracy import QuestionAccuracy
from backend.qa.accuracy_run import RunContext, Sample, ask_all
from backend.qa.export import history_source
from backend.qa.run_report import table, write_chart, write_json
from backend.qa.run_store import RunStore
from backend.settings import PROJECT_ROOT, Settings


@dataclass(frozen=True)
class RunOptions:
    samples: int = 5
    questions_file: Path | None = None
    user: str = LOCAL_USER
    out_dir: Path = PROJECT_ROOT / "results"
    parallel: int = 4
    temperature: float | None = None  # None: the page's default for a new chat
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None


class RunRefused(Exception):
    """The run cannot start; the message says why and what to do."""


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def read_questions(path: Path | None) -> tuple[list[Question], list[Question]]:
    """The questions to ask, and those of them the answer key does not know (asked, but not graded)."""
    try:
        questions = list(load_questions(path or QUESTIONS_FILE))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise RunRefused(f"cannot read the questions file {path}: {err}. It must be JSON like "
                         f"{QUESTIONS_FILE} (an object whose \"questions\" list has id, label, question, "
                         "expected, accept).") from None
    if not questions:
        raise RunRefused(f"the questions file {path} holds no questions")
    keyed = {_key(q.question) for q in load_questions()}
    return questions, [q for q in questions if _key(q.question) not in keyed]


def run_sampling(settings: Settings, options: RunOptions) -> Sampling:
    """The page's new-chat sampling with the options given, checked by the settings panel's own rules."""
    wanted = {"temperature": options.temperature, "top_p": options.top_p, "max_tokens": options.max_tokens,
              "seed": options.seed}
    sampling, problems = apply_update(default_sampling(settings),
                                      {k: v for k, v in wanted.items() if v is not None}, settings)
    if problems:
        raise RunRefused("; ".join(p.split("; kept")[0] for p in problems))
    return sampling


def chat_settings(sampling: Sampling) -> dict:
    """What the page's settings panel stores: a resumed run's chat carries on with the run's sampling."""
    return {"system_prompt": sampling.system_prompt, "temperature": sampling.temperature, "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens, "thinking": sampling.thinking,
            "seed": "" if sampling.seed is None else str(sampling.seed)}


def progress_printer(total: int) -> Callable[[Sample], None]:
    done = 0

    def on_done(sample: Sample) -> None:
        nonlocal done
        done += 1
        graded = sample.graded()
        read = f" (read {graded.read!r})" if graded.read is not None else ""
        extra = f": {sample.error}" if sample.error else ""
        print(f"[{done:>4}/{total}] {sample.question.id} #{sample.number}: {graded.outcome}{read}{extra} · "
              f"{sample.stats.answer_tokens} tokens · {sample.stats.finish_reason or 'none'}", flush=True)

    return on_done


async def _open_run(settings: Settings, options: RunOptions, questions: list[Question], sampling: Sampling,
                    on_done: Callable[[Sample], None]) -> RunContext:
    if not settings.history:
        raise RunRefused("the history is off (RCHAT_HISTORY=false), and an accuracy run stores every answer "
                         "there: turn it on for this command (RCHAT_HISTORY=true)")
    if not await is_healthy(settings):
        raise RunRefused(f"no model server answers at {settings.server_url}. An accuracy run asks the running "
                         "server: start it first (./start_service.sh, or `python -m backend start`), or point "
                         "RCHAT_VLLM_PORT / RCHAT_BASE_URL at it, then run this again.")
    client = make_client(settings, api_key=settings.api_key.get_secret_value())
    try:
        await client.models.list()  # a wrong key is found before anything is stored
    except (openai.AuthenticationError, openai.PermissionDeniedError):
        await client.close()
        raise RunRefused(f"the model server at {settings.server_url} refused the API key. This command takes the "
                         "key of the app running under the same settings (./start_service.sh) by itself; for a "
                         "server started otherwise, set RCHAT_API_KEY (in .env) to the key it was started with.") from None
    except openai.OpenAIError:
        pass  # anything else shows up, worded, on the first answer
    name = (f"Accuracy run {time.strftime('%Y-%m-%d %H:%M')} · {len(questions)} question(s) × "
            f"{options.samples} · {settings.resolved_served_name}")
    try:
        store = RunStore(history_source(settings), user=options.user, name=name,
                         metadata={"chat_settings": chat_settings(sampling), "client_type": "webapp",
                                   "rchat_run": {"samples": options.samples, "questions": len(questions)}})
    except HistoryUnavailable as err:
        await client.close()
        raise RunRefused(str(err)) from None
    return RunContext(client=client, settings=settings, sampling=sampling, store=store,
                      engine=await engine_facts(settings), slots=asyncio.Semaphore(options.parallel),
                      on_done=on_done)


async def _run(settings: Settings, options: RunOptions) -> int:
    questions, unkeyed = read_questions(options.questions_file)
    sampling = run_sampling(settings, options)
    for q in unkeyed:
        print(f"note: {q.id} is not in the answer key ({QUESTIONS_FILE.name}): it is asked but not graded",
              file=sys.stderr)
    ctx = await _open_run(settings, options, questions, sampling, progress_printer(len(questions) * options.samples))
    started, clock, stopped = now_iso(), time.monotonic(), False
    batches: list[list[Sample]] = []
    print(f"asking {len(questions)} question(s) × {options.samples} of {settings.resolved_served_name} at "
          f"{settings.server_url} (temperature {sampling.temperature:g}, top-p {sampling.top_p:g}, max tokens "
          f"{sampling.max_tokens}); answers go to the chat {ctx.store.thread_id} of user {options.user}", flush=True)
    failure: ChatAppError | None = None
    try:
        await ask_all(ctx, questions, options.samples, batches)
    except asyncio.CancelledError:  # Ctrl-C: asyncio cancels this task; what was stored stays
        task = asyncio.current_task()
        assert task is not None  # asyncio.run runs this coroutine as a task
        task.uncancel()
        stopped = True
    except ChatAppError as err:
        failure = err
    finally:
        ctx.store.close()
        await ctx.client.close()
    return _summarize(settings, options, ctx, batches, sampling=sampling, started=started,
                      seconds=time.monotonic() - clock, stopped=stopped, failure=failure)


def accuracies(batches: list[list[Sample]]) -> list[QuestionAccuracy]:
    out = []
    for batch in batches:
        asked = [s for s in batch if s.outcome != "not asked"]
        if asked:
            out.append(QuestionAccuracy(batch[0].question.id, batch[0].question.expected, [s.graded() for s in asked]))
    return out


def _summarize(settings: Settings, options: RunOptions, ctx: RunContext, batches: list[list[Sample]], *,
               sampling: Sampling, started: str, seconds: float, stopped: bool,
               failure: ChatAppError | None) -> int:
    stored = sum(s.outcome != "not asked" for batch in batches for s in batch)
    where = f"the chat \"{ctx.store.name}\" (user {options.user}) in {history_source(settings)}"
    if stopped:
        print(f"\nStopped by Ctrl-C. The {stored} answer(s) given so far are stored in {where}; "
              "the summary below covers them.", flush=True)
    elif failure is not None:
        hint = (" (a restarted app has a new key unless RCHAT_API_KEY is set: run this again to take it)"
                if isinstance(failure, BackendRejected) else "")
        print(f"\nThe run stopped: {failure}{hint} The {stored} answer(s) given before are stored in {where}.",
              file=sys.stderr, flush=True)
    else:
        print(f"\nDone in {seconds:.0f} s: {stored} answer(s) stored in {where}.", flush=True)
    results = accuracies(batches)
    if not results:
        return 130 if stopped else 1
    print(table(results), flush=True)
    stem = options.out_dir / f"qa-run-{time.strftime('%Y%m%d-%H%M%S')}"
    about = {"started_at": started, "finished_at": now_iso(), "wall_seconds": round(seconds, 1),
             "stopped": stopped, "failure": str(failure) if failure else None, "served_model":
             settings.resolved_served_name, "server_url": settings.server_url, "vllm_version": ctx.vllm_version,
             "sampling": chat_settings(sampling), "samples": options.samples,
             "questions_file": str(options.questions_file or QUESTIONS_FILE), "thread_id": ctx.store.thread_id,
             "thread_name": ctx.store.name, "user": options.user, "history_db": str(history_source(settings))}
    write_json(stem.with_suffix(".json"), results, about)
    print(f"wrote {stem.with_suffix('.json')}")
    print(write_chart(stem.with_suffix(".png"), results, title=f"{ctx.store.name}\ntemperature "
                      f"{sampling.temperature:g}, top-p {sampling.top_p:g}, max tokens {sampling.max_tokens}"))
    return 130 if stopped else (1 if failure else 0)


def run_accuracy(settings: Settings, options: RunOptions) -> int:
    """The command's body: 0 done, 1 the server failed mid-run, 2 refused to start, 130 stopped by Ctrl-C."""
    try:
        return asyncio.run(_run(settings, options))
    except RunRefused as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
