"""Compare mode's flow on the page: a comparison asked, a vote cast.

The composer's Answer picker (backend/page/composer.py) says which messages are compared. A
comparison asks each contender the question on its own (no earlier turns).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import chainlit as cl

from backend.chat.sampling import Sampling
from backend.errors import SettingsError
from backend.page.compare_view import INTRO, CompareView
from backend.page.notices import notice, wait_for_backend
from backend.page.services import PageServices
from backend.qa.compare.comparison import Comparison, cast, run, shuffled
from backend.qa.compare.contenders import built_in_pair, load_pair
from backend.settings import Settings


async def compare(
    question: str,
    pair_name: str,
    *,
    settings: Settings,
    sampling: Sampling,
    services: PageServices,
    views: dict[str, CompareView],
    stop_requested: Callable[[], bool],
    session_id: str,
) -> None:
    """Ask both contenders, stream them side by side, then open the vote."""
    try:
        pair = load_pair(settings.contenders_file) if pair_name == "compare" else built_in_pair(pair_name)
    except SettingsError as err:
        await notice(f"Compare cannot start: {err}. Fix the file, then ask again.")
        return
    if not await wait_for_backend(settings, health=services.health):
        return
    comparison = Comparison(question=question, shown=shuffled(pair))
    view = CompareView(cl.Message(content=INTRO), comparison.id)
    await view.open()
    with services.streams.streaming():
        await run(
            comparison,
            settings=settings,
            sampling=sampling,
            client_for=services.clients,
            observers=view.observers(),
            stop=stop_requested,
            session_id=session_id,
            facts=services.facts,
        )
    await view.ended(comparison)
    views[view.id] = view


async def cast_vote(payload: dict[str, Any], *, views: dict[str, CompareView], user: str) -> None:
    view = views.get(str(payload.get("battle_id")))
    if view is None or view.phase != "vote":
        await notice("This comparison can no longer be voted on (it was voted already, or the page restarted).")
        return
    try:
        cast(
            view.record or {},
            str(payload.get("vote")),
            reasons=list(payload.get("reasons") or []),
            comment=str(payload.get("comment") or ""),
            user=user,
        )
    except ValueError as err:
        await notice(f"The vote was not taken: {err}.")
        return
    await view.reveal()
