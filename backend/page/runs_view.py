"""Run against run on the page: the composer's Compare runs command, as `qa compare` prints it.

Without text it compares the two latest accuracy runs in results/; with two file names (or paths)
typed after it, those two, the first as A.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import chainlit as cl

from backend.errors import CompareInputError
from backend.page.notices import notice
from backend.qa.compare.runs import read_run
from backend.qa.compare.runs_report import comparison_text
from backend.settings import PROJECT_ROOT

COMMAND = "Compare runs"
RESULTS = PROJECT_ROOT / "results"


def runs_command() -> dict:
    return {
        "id": COMMAND,
        "icon": "git-compare",
        "button": True,
        "description": "The two latest accuracy runs side by side (or type two run files' names)",
    }


def pick_runs(text: str, folder: Path = RESULTS) -> tuple[Path, Path] | str:
    """The two run files to compare, or why there are not two."""
    names = text.split()
    if len(names) == 2:
        paths = [Path(n) if Path(n).is_absolute() else folder / n for n in names]
        return (
            (paths[0], paths[1])
            if all(p.exists() for p in paths)
            else f"No run file {next(n for n, p in zip(names, paths, strict=True) if not p.exists())} in {folder}."
        )
    if names:
        return "Type two run files' names after the command (qa-run-*.json in results/), or none for the latest two."
    runs = sorted(folder.glob("qa-run-*.json"))
    if len(runs) < 2:
        return (
            f"There are {len(runs)} accuracy run(s) in {folder}; comparing needs two. Make them with "
            "`python -m backend qa run`."
        )
    return runs[-2], runs[-1]


async def send_runs(text: str) -> None:
    picked = pick_runs(text)
    if isinstance(picked, str):
        await notice(picked)
        return
    try:
        a, b = await asyncio.to_thread(read_run, picked[0]), await asyncio.to_thread(read_run, picked[1])
    except CompareInputError as err:
        await notice(f"The runs could not be compared: {err}")
        return
    body = comparison_text(a, b)
    await cl.Message(
        content=f"**{COMMAND}** · A: `{picked[0].name}` · B: `{picked[1].name}`\n\n```\n{body}\n```", author=COMMAND
    ).send()
