"""One page process's share of tests/test_history_shared.py, run as its own OS process.

`python -m tests.history_writer FOLDER WORKER THREADS STEPS UPDATES` starts as the page does
(backend/qa/setup.set_up: users, auth secret, history database; backend/page/history_layer), waits until every writer is ready
(FOLDER/go appears), then logs the shared user in and writes THREADS chats of STEPS answers, each
answer saved UPDATES times as it streams, through the real data layer, all at once. It prints the
auth secret's hash and how many writes failed. RCHAT_DATABASE_URL in the environment picks PostgreSQL.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sys
import time
from pathlib import Path

from chainlit.context import init_http_context
from chainlit.user import User

from backend.page import history_layer
from backend.qa.setup import set_up
from backend.settings import load_settings

failures: list[str] = []


async def _count_failure(reason: str) -> None:
    failures.append(reason)  # instead of a notice on a page: this process has none


async def write(store, worker: int, threads: int, steps: int, updates: int) -> None:
    user = await store.create_user(User(identifier="local"))  # every writer's first login, at once
    assert user is not None, "the shared user was not found after its first login"

    async def one_chat(t: int) -> None:
        thread_id = f"w{worker}-t{t}"
        await store.update_thread(thread_id, name=f"chat {thread_id}", user_id=user.id)
        for s in range(steps):
            step = {
                "id": f"{thread_id}-s{s}",
                "threadId": thread_id,
                "name": "model",
                "type": "assistant_message",
                "streaming": True,
                "metadata": {"rchat": {"kind": "answer"}},
                "tags": ["a"],
                "createdAt": f"2026-12-08T00:00:{s:02d}.{t:06d}Z",
            }
            for u in range(updates):
                await store.update_step({**step, "output": f"version {u}", "streaming": u < updates - 1})

    await asyncio.gather(*(one_chat(t) for t in range(threads)))


def main(folder: Path, worker: int, threads: int, steps: int, updates: int) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    history_layer._tell_user_once = _count_failure
    (folder / f"ready-{worker}").touch()
    while not (folder / "go").exists():
        time.sleep(0.01)
    settings = load_settings(_env_file=None, data_dir=folder / "data")  # RCHAT_DATABASE_URL from the env
    qa = set_up(settings)  # every writer prepares the same database at the same moment
    assert qa.history, qa.history_off_reason
    store = history_layer.history_layer(settings)

    async def run() -> None:
        init_http_context()  # Chainlit's data layer wants a context; an HTTP one writes at once
        try:
            await write(store, worker, threads, steps, updates)
        finally:
            await store.close()

    asyncio.run(run())
    print(f"secret {hashlib.sha256(os.environ['CHAINLIT_AUTH_SECRET'].encode()).hexdigest()}")
    print(f"failures {len(failures)} {failures[:3]}")


if __name__ == "__main__":
    folder, worker, *counts = sys.argv[1:]
    main(Path(folder), int(worker), *map(int, counts))
