"""The leaderboard on the page: the composer's Leaderboard command posts the ratings from every vote.

The same board as `python -m backend qa board` (backend/qa/compare/board.py): Bradley-Terry ratings
on the Elo scale with 95 % bootstrap intervals, battles and win rates, then who beat whom.
"""

from __future__ import annotations

import asyncio

import chainlit as cl

from backend.errors import CompareInputError
from backend.page.notices import notice
from backend.qa.compare.battles import battles_from_records, load_battle_records
from backend.qa.compare.board import Board, board_text, build_board
from backend.qa.export import history_source
from backend.settings import Settings

COMMAND = "Leaderboard"
ROUNDS = 300  # bootstrap rounds: enough for the page's intervals, quick on a busy page process


def board_command() -> dict:
    return {
        "id": COMMAND,
        "icon": "trophy",
        "button": True,
        "description": "Ratings from every vote in Compare mode, with 95 % intervals",
    }


async def send_board(settings: Settings, *, history_off_reason: str) -> None:
    if history_off_reason:
        await notice(f"{history_off_reason} So there are no stored votes to rate.")
        return
    try:
        battles = battles_from_records(await asyncio.to_thread(load_battle_records, history_source(settings)))
        board = await asyncio.to_thread(build_board, battles, rounds=ROUNDS, seed=0) if battles else None
    except CompareInputError as err:
        await notice(f"The leaderboard could not be built: {err}")
        return
    if board is None:
        await notice("No votes yet: pick *Compare* in the composer, ask a question and vote on the two answers.")
        return
    await cl.Message(content=board_markdown(board), author=COMMAND).send()


def board_markdown(board: Board) -> str:
    rows = ["| rank | contender | rating | 95 % interval | battles | win rate |", "|---|---|---|---|---|---|"]
    for rank, s in enumerate(board.standings, start=1):
        r = s.rating
        rows.append(
            f"| {rank} | {s.player} | {r.rating:.0f} | {r.low:.0f} – {r.high:.0f} | {s.battles} | "
            f"{100 * s.win_rate:.0f} % |"
        )
    matrices = board_text(board, heading="").split("\n\n", 2)[-1]  # the win-rate and count matrices
    return (
        f"**Leaderboard** · {board.battles} voted comparison(s) · ties count half\n\n"
        + "\n".join(rows)
        + f"\n\n```\n{matrices.strip()}\n```"
    )
