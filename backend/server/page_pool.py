"""The chat page as one process, or as RCHAT_PAGE_WORKERS processes behind HAProxy, each one supervised.

With one process (a CPU host's default) nothing differs from a page on its own: it listens on
RCHAT_UI_PORT itself and no balancer runs. With N > 1, page i of N listens on an internal loopback
port and gets `RCHAT_PAGE_REPLICA=i/N` (the live strip shows "page i of N"); HAProxy
(backend/server/balancer.py) listens on RCHAT_UI_PORT and keeps each browser on one of them. Every page
and HAProxy is a Supervised child with its own restart policy: a page that dies is restarted while the
others serve (HAProxy sends its browsers elsewhere meanwhile), and every process id reaches the watchdog
through the same hooks as vLLM's. HAProxy starts once every page first answered, and stops first.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from typing import Protocol, cast

import httpx

from backend.errors import ChatAppError
from backend.server.balancer import INSTALL_HINT, Balancer, find_haproxy
from backend.server.chat_page import ChatPage
from backend.server.processes import free_ports
from backend.server.restart_policy import RestartPolicy
from backend.server.supervision import Hooks, State, Supervised
from backend.settings import PAGE_REPLICA_ENV, Settings

# Page processes on a GPU host when RCHAT_PAGE_WORKERS is empty: the fewest that keep up with vLLM on one
# GPU at 16-256 sessions (docs/gpu.md, "page processes behind HAProxy on the H100"). A CPU host keeps
# one (its cores go to vLLM).
GPU_PAGE_WORKERS = 4


def page_workers(settings: Settings, device: str) -> int:
    """RCHAT_PAGE_WORKERS, or the host's default: GPU_PAGE_WORKERS where vLLM runs on a GPU, else 1."""
    if settings.page_workers is not None:
        return settings.page_workers
    return GPU_PAGE_WORKERS if device == "cuda" else 1


@dataclass(frozen=True)
class Plan:
    """How the page is deployed: the ports the page processes listen on, and HAProxy's path (None: no balancer)."""

    ports: list[int]
    haproxy: str | None = None
    note: str = ""  # why fewer processes run than asked for, in one line

    @property
    def count(self) -> int:
        return len(self.ports)


def internal_ports(count: int, avoid: set[int]) -> list[int]:
    """`count` free loopback ports, none of them in `avoid` (vLLM's port is free until vLLM starts)."""
    while True:
        ports = free_ports(count)
        if not avoid & set(ports):
            return ports


def plan(settings: Settings, device: str, haproxy: str | None = None) -> Plan:
    """Pick the deployment; without HAProxy installed, one process and a line saying what to install."""
    wanted = page_workers(settings, device)
    if wanted == 1:
        return Plan([settings.ui_port])
    haproxy = haproxy or find_haproxy()
    if haproxy is None:
        return Plan(
            [settings.ui_port],
            note=f"{wanted} chat page processes need HAProxy, which is not installed ({INSTALL_HINT}); running one",
        )
    return Plan(internal_ports(wanted, {settings.ui_port, settings.vllm_port}), haproxy)


class ListensOnPort(Protocol):
    def check_port(self) -> None: ...  # ServerStartError if its port is taken


class PagePool:
    """The page processes (and HAProxy in front of several), ticked by the launcher's loop."""

    def __init__(
        self, settings: Settings, layout: Plan, *, env: dict[str, str], hooks: Hooks, argv: list[str] | None = None
    ) -> None:
        self.settings, self.plan = settings, layout
        self.pages = [
            self._supervised(self._page(i, port, env, argv), hooks) for i, port in enumerate(layout.ports, start=1)
        ]
        self.balancer: Supervised | None = None
        if layout.haproxy is not None:
            balancer = Balancer(
                executable=layout.haproxy,
                host=settings.ui_host,
                port=settings.ui_port,
                pages=layout.ports,
                log_dir=settings.log_dir,
                startup_timeout=settings.ui_startup_timeout,
            )
            self.balancer = self._supervised(balancer, hooks)

    def _page(self, index: int, port: int, env: dict[str, str], argv: list[str] | None) -> ChatPage:
        count = self.plan.count
        if count == 1:
            return ChatPage(
                host=self.settings.ui_host,
                port=port,
                argv=argv,
                env=env,
                log_path=self.settings.log_dir / f"ui-{port}.log",
                startup_timeout=self.settings.ui_startup_timeout,
            )
        page = ChatPage(
            host="127.0.0.1",
            port=port,
            env={**env, PAGE_REPLICA_ENV: f"{index}/{count}"},
            log_path=self.settings.log_dir / f"ui-{self.settings.ui_port}-page{index}.log",
            startup_timeout=self.settings.ui_startup_timeout,
        )
        page.name = f"chat page {index} of {count}"
        return page

    def _supervised(self, child: ChatPage | Balancer, hooks: Hooks) -> Supervised:
        return Supervised(child, RestartPolicy(self.settings.ui_max_restarts, self.settings.restart_window), hooks)

    @property
    def children(self) -> list[Supervised]:
        return self.pages + ([self.balancer] if self.balancer else [])

    def describe(self) -> str:
        """The start-up line saying how the page runs."""
        if self.balancer is None:
            return f"chat page: 1 process on :{self.settings.ui_port}" + (
                f" ({self.plan.note})" if self.plan.note else ""
            )
        ports = ", ".join(str(p) for p in self.plan.ports)
        return (
            f"chat page: {self.plan.count} processes behind HAProxy on :{self.settings.ui_port} "
            f"(internal ports {ports})"
        )

    def front(self) -> Supervised:
        """What users reach on RCHAT_UI_PORT: HAProxy, or the one page."""
        return self.balancer or self.pages[0]

    def check_ports(self) -> None:
        for sup in self.children:
            cast(ListensOnPort, sup.child).check_port()  # the pages and HAProxy: each has its port

    @property
    def started(self) -> bool:
        return self.pages[0].state is not State.STOPPED

    def begin(self) -> None:
        """The first start of every page; HAProxy follows in tick() once they all answered."""
        for page in self.pages:
            page.begin()

    def tick(self, http: httpx.Client) -> None:
        for page in self.pages:
            page.tick(http)
        balancer = self.balancer
        if balancer is not None:
            if balancer.state is State.STOPPED and all(p.ever_ready for p in self.pages):
                balancer.begin()
            balancer.tick(http)

    def error(self) -> ChatAppError | None:
        """Why a first start failed (the launcher stops everything with it), or None."""
        return next((sup.error for sup in self.children if sup.state is State.FAILED), None)

    def gave_up(self) -> Supervised | None:
        return next((sup for sup in self.children if sup.state is State.GAVE_UP), None)

    def stop(self, *, grace: float) -> None:
        """HAProxy first (no new traffic), then every page: all are told at once, then each is awaited."""
        if self.balancer is not None:
            self.balancer.stop(grace=grace)
        for page in self.pages:
            if page.child.proc is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(page.child.proc.pid, signal.SIGTERM)
        for page in self.pages:
            page.stop(grace=grace)
