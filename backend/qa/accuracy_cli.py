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
from backend.qa.accuracy_run import RunContext, Sample, accuracies, ask_all, progress_printer
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
        raise RunRefused(
            f"cannot read the questions file {path}: {err}. It must be JSON like "
            f'{QUESTIONS_FILE} (an object whose "questions" list has id, label, question, '
            "expected, accept)."
        ) from None
    if not questions:
        raise RunRefused(f"the questions file {path} holds no questions")
    keyed = {_key(q.question) for q in load_questions()}
    return questions, [q for q in questions if _key(q.question) not in keyed]


def run_sampling(settings: Settings, options: RunOptions) -> Sampling:
    """The page's new-chat sampling with the options given, checked by the settings panel's own rules."""
    wanted = {
        "temperature": options.temperature,
        "top_p": options.top_p,
        "max_tokens": options.max_tokens,
        "seed": options.seed,
    }
    sampling, problems = apply_update(
        default_sampling(settings), {k: v for k, v in wanted.items() if v is not None}, settings
    )
    if problems:
        raise RunRefused("; ".join(p.split("; kept")[0] for p in problems))
    return sampling


def chat_settings(sampling: Sampling) -> dict:
    """What the page's settings panel stores: a resumed run's chat carries on with the run's sampling."""
    return {
        "system_prompt": sampling.system_prompt,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "thinking": sampling.thinking,
        "seed": "" if sampling.seed is None else str(sampling.seed),
    }


async def _asking_client(settings: Settings) -> openai.AsyncOpenAI:
    """A client for the running server, once it answers and takes our key (else RunRefused, worded)."""
    if not await is_healthy(settings):
        raise RunRefused(
            f"no model server answers at {settings.server_url}. An accuracy run asks the running "
            "server: start it first (./start_service.sh, or `python -m backend start`), or point "
            "RCHAT_VLLM_PORT / RCHAT_BASE_URL at it, then run this again."
        )
    client = make_client(settings, api_key=settings.api_key.get_secret_value())
    try:
        await client.models.list()  # a wrong key is found before anything is stored
    except (openai.AuthenticationError, openai.PermissionDeniedError):
        await client.close()
        raise RunRefused(
            f"the model server at {settings.server_url} refused the API key. This command takes the "
            "key of the app running under the same settings (./start_service.sh) by itself; for a "
            "server started otherwise, set RCHAT_API_KEY (in .env) to the key it was started with."
        ) from None
    except openai.OpenAIError:
        pass  # anything else shows up, worded, on the first answer
    return client


async def _open_run(
    settings: Settings,
    options: RunOptions,
    questions: list[Question],
    sampling: Sampling,
    on_done: Callable[[Sample], None],
) -> RunContext:
    if not settings.history:
        raise RunRefused(
            "the history is off (RCHAT_HISTORY=false), and an accuracy run stores every answer "
            "there: turn it on for this command (RCHAT_HISTORY=true)"
        )
    client = await _asking_client(settings)
    name = (
        f"Accuracy run {time.strftime('%Y-%m-%d %H:%M')} · {len(questions)} question(s) × "
        f"{options.samples} · {settings.resolved_served_name}"
    )
    metadata = {
        "chat_settings": chat_settings(sampling),
        "client_type": "webapp",
        "rchat_run": {"samples": options.samples, "questions": len(questions)},
    }
    try:
        store = RunStore(history_source(settings), user=options.user, name=name, metadata=metadata)
    except HistoryUnavailable as err:
        await client.close()
        raise RunRefused(str(err)) from None
    return RunContext(
        client=client,
        settings=settings,
        sampling=sampling,
        store=store,
        engine=await engine_facts(settings),
        slots=asyncio.Semaphore(options.parallel),
        on_done=on_done,
    )


@dataclass
class RunEnd:
    """How a run ended: when it started, how long it took, whether Ctrl-C or a failure stopped it."""

    started: str
    seconds: float = 0.0
    stopped: bool = False
    failure: ChatAppError | None = None


async def _run(settings: Settings, options: RunOptions) -> int:
    questions, unkeyed = read_questions(options.questions_file)
    sampling = run_sampling(settings, options)
    for q in unkeyed:
        print(
            f"note: {q.id} is not in the answer key ({QUESTIONS_FILE.name}): it is asked but not graded",
            file=sys.stderr,
        )
    ctx = await _open_run(settings, options, questions, sampling, progress_printer(len(questions) * options.samples))
    end, clock = RunEnd(started=now_iso()), time.monotonic()
    batches: list[list[Sample]] = []
    print(
        f"asking {len(questions)} question(s) × {options.samples} of {settings.resolved_served_name} at "
        f"{settings.server_url} (temperature {sampling.temperature:g}, top-p {sampling.top_p:g}, max tokens "
        f"{sampling.max_tokens}); answers go to the chat {ctx.store.thread_id} of user {options.user}",
        flush=True,
    )
    try:
        await ask_all(ctx, questions, options.samples, batches)
    except asyncio.CancelledError:  # Ctrl-C: asyncio cancels this task; what was stored stays
        task = asyncio.current_task()
        assert task is not None  # asyncio.run runs this coroutine as a task
        task.uncancel()
        end.stopped = True
    except ChatAppError as err:
        end.failure = err
    finally:
        ctx.store.close()
        await ctx.client.close()
    end.seconds = time.monotonic() - clock
    return _summarize(settings, options, ctx, batches, sampling=sampling, end=end)


def _summarize(
    settings: Settings,
    options: RunOptions,
    ctx: RunContext,
    batches: list[list[Sample]],
    *,
    sampling: Sampling,
    end: RunEnd,
) -> int:
    _say_end(settings, options, ctx, batches, end)
    results = accuracies(batches)
    if not results:
        return 130 if end.stopped else 1
    print(table(results), flush=True)
    stem = options.out_dir / f"qa-run-{time.strftime('%Y%m%d-%H%M%S')}"
    about = {
        "started_at": end.started,
        "finished_at": now_iso(),
        "wall_seconds": round(end.seconds, 1),
        "stopped": end.stopped,
        "failure": str(end.failure) if end.failure else None,
        "served_model": settings.resolved_served_name,
        "server_url": settings.server_url,
        "vllm_version": ctx.vllm_version,
        "sampling": chat_settings(sampling),
        "samples": options.samples,
        "questions_file": str(options.questions_file or QUESTIONS_FILE),
        "thread_id": ctx.store.thread_id,
        "thread_name": ctx.store.name,
        "user": options.user,
        "history_db": str(history_source(settings)),
    }
    write_json(stem.with_suffix(".json"), results, about)
    print(f"wrote {stem.with_suffix('.json')}")
    title = (
        f"{ctx.store.name}\ntemperature {sampling.temperature:g}, top-p {sampling.top_p:g}, "
        f"max tokens {sampling.max_tokens}"
    )
    print(write_chart(stem.with_suffix(".png"), results, title=title))
    return 130 if end.stopped else (1 if end.failure else 0)


def _say_end(
    settings: Settings, options: RunOptions, ctx: RunContext, batches: list[list[Sample]], end: RunEnd
) -> None:
    stored = sum(s.outcome != "not asked" for batch in batches for s in batch)
    where = f'the chat "{ctx.store.name}" (user {options.user}) in {history_source(settings)}'
    if end.stopped:
        print(
            f"\nStopped by Ctrl-C. The {stored} answer(s) given so far are stored in {where}; "
            "the summary below covers them.",
            flush=True,
        )
    elif end.failure is not None:
        hint = (
            " (a restarted app has a new key unless RCHAT_API_KEY is set: run this again to take it)"
            if isinstance(end.failure, BackendRejected)
            else ""
        )
        print(
            f"\nThe run stopped: {end.failure}{hint} The {stored} answer(s) given before are stored in {where}.",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(f"\nDone in {end.seconds:.0f} s: {stored} answer(s) stored in {where}.", flush=True)


def run_accuracy(settings: Settings, options: RunOptions) -> int:
    """The command's body: 0 done, 1 the server failed mid-run, 2 refused to start, 130 stopped by Ctrl-C."""
    try:
        return asyncio.run(_run(settings, options))
    except RunRefused as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
