"""The page's /health check, shared by its sessions: one request however many messages arrive at once.

A counting fake transport stands in for the server: what is measured is how many requests the page
sends, which a real server does not report (docs/gpu.md found 59 in one second for 64 messages).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from backend.chat.health import HealthChecker, is_healthy
from tests.conftest import make_settings


class Counted:
    """A health checker on a fake transport that counts the requests the page sends."""

    def __init__(self, tmp_path: Path) -> None:
        self.asked: list[str] = []

        async def server(request: httpx.Request) -> httpx.Response:
            self.asked.append(str(request.url))
            await asyncio.sleep(0.2)  # a busy server answers slowly: the others arrive meanwhile
            return httpx.Response(200)

        self.check = HealthChecker(
            make_settings(tmp_path), http=httpx.AsyncClient(transport=httpx.MockTransport(server))
        )


@pytest.fixture()
async def counted(tmp_path: Path):
    built = Counted(tmp_path)
    yield built
    await built.check.close()


async def test_64_messages_at_once_ask_the_server_once(counted: Counted) -> None:
    answers = await asyncio.gather(*(counted.check(fresh_for=2.0) for _ in range(64)))
    assert all(answers) and len(counted.asked) == 1
    assert await counted.check(fresh_for=2.0) and len(counted.asked) == 1  # still fresh


async def test_a_stop_while_waiting_does_not_cancel_the_others_check(counted: Counted) -> None:
    first = asyncio.ensure_future(counted.check(fresh_for=2.0))
    await asyncio.sleep(0.05)
    second = asyncio.ensure_future(counted.check(fresh_for=2.0))
    await asyncio.sleep(0.05)
    first.cancel()  # the user who asked first pressed Stop
    assert await second and len(counted.asked) == 1


async def test_without_fresh_for_every_call_asks(counted: Counted) -> None:
    await asyncio.gather(counted.check(), counted.check())
    assert len(counted.asked) == 2


async def test_a_command_line_check_makes_and_closes_its_own_client(tmp_path: Path) -> None:
    assert not await is_healthy(make_settings(tmp_path))  # nothing listens on the settings' port
