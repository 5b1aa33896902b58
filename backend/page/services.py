"""The page process's services, made once at app start and closed at shutdown: no module-level state.

The /health checker every session shares, the engine facts of the stamps, the count of answers streaming (it paces page updates),
the /metrics poller of the live strip, the answers that reloaded tabs can follow, and the clients of
Compare's contenders. app.py makes one; tests build their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import openai

from backend.chat.client import make_client
from backend.chat.health import HealthChecker
from backend.engine.facts import FactsCache
from backend.page.live_answers import LiveAnswers
from backend.page.live_strip import LiveStrip
from backend.page.token_batcher import StreamCounter
from backend.settings import Settings


class Clients:
    """The app's client for its own server, and one per other server a contender names."""

    def __init__(self, settings: Settings, own: openai.AsyncOpenAI) -> None:
        self.own_url, self.clients = settings.server_url, {settings.server_url: own}

    def __call__(self, settings: Settings) -> openai.AsyncOpenAI:
        if settings.server_url not in self.clients:
            self.clients[settings.server_url] = make_client(settings, api_key=settings.api_key.get_secret_value())
        return self.clients[settings.server_url]

    async def close(self) -> None:
        for url, client in self.clients.items():
            if url != self.own_url:
                await client.close()


@dataclass
class PageServices:
    settings: Settings
    health: HealthChecker
    streams: StreamCounter
    strip: LiveStrip
    live: LiveAnswers
    clients: Clients
    facts: FactsCache

    @classmethod
    def create(cls, settings: Settings, client: openai.AsyncOpenAI) -> PageServices:
        return cls(
            settings=settings,
            health=HealthChecker(settings),
            streams=StreamCounter(),
            strip=LiveStrip(settings),
            live=LiveAnswers(),
            clients=Clients(settings, client),
            facts=FactsCache(),
        )

    def start(self) -> None:
        self.strip.start()

    async def close(self) -> None:
        await self.strip.stop()
        await self.clients.close()  # the contenders' own clients (the app's is closed by app.py)
        await self.health.close()
