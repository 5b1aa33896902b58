"""The page's /health check, shared by its sessions: one request however many messages arrive at once.

A counting fake transport stands in for the server: what is measured is how many requests the page
sends, which a real server does not report (docs/gpu.md found 59 in one second for 64 messages).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from backend.chat import health
from tests.conftest import make_settings


@pytest.fixture()
def counted(monkeypatch) -> list[str]:
    asked: list[str] = []

    async def server(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        await asyncio.sleep(0.2)  # a busy server answers slowly: the others arrive meanwhile
        return httpx.Response(200)

    monkeypatch.setattr(health, "_http", httpx.AsyncClient(transport=httpx.MockTransport(server)))
    monkeypatch.setattr(health, "_healthy_at", {})
    monkeypatch.setattr(health, "_checking", {})
    return asked


async def test_64_messages_at_once_ask_the_server_once(counted: list[str], tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    answers = await asyncio.gather(*(health.is_healthy(settings, fresh_for=2.0) for _ in range(64)))
    assert all(answers) and len(counted) == 1
    assert await health.is_healthy(settings, fresh_for=2.0) and len(counted) == 1  # still fresh


async def test_a_stop_while_waiting_does_not_cancel_the_others_check(counted: list[str], tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    first = asyncio.ensure_future(health.is_healthy(settings, fresh_for=2.0))
    await asyncio.sleep(0.05)
    second = asyncio.ensure_future(health.is_healthy(settings, fresh_for=2.0))
    await asyncio.sleep(0.05)
    first.cancel()  # the user who asked first pressed Stop
    assert await second and len(counted) == 1


async def test_without_fresh_for_every_call_asks(counted: list[str], tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await asyncio.gather(health.is_healthy(settings), health.is_healthy(settings))
    assert len(counted) == 2
