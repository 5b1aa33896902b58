"""A headless client of the chat page's websocket, acting as one browser tab (benchmark, load tests).

Chainlit 2.12 speaks socket.io at /ws/socket.io: connect with a session id in `auth`, emit
`connection_successful`, then `client_message`; the server answers with `stream_start`,
`stream_token`, `new_message`/`update_message` and `task_end`. Update arrival times are recorded so
the benchmark measures what a user would see: a streamed message's first text comes in its
`stream_start`, the rest in `stream_token`s. Needs python-socketio and aiohttp (requirements-dev).

The page needs a login: the session logs in first (password form when `user` is given, else the
local user's header login) and connects with the cookie it got, as a browser does.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import socketio


@dataclass
class UiAnswer:
    sent_at: float
    token_times: list[float] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # message id -> final text


class ChainlitSession:
    """One chat session over the websocket: `async with ChainlitSession(url) as session: ...`."""

    def __init__(self, url: str, *, user: str = "", password: str = "", thread_id: str = "") -> None:
        self.url = url.rstrip("/")
        self.user, self.password = user, password
        self.resume_id = thread_id  # an existing thread's id: the session resumes it
        self.thread_id = thread_id  # the server names a new thread at the first message
        self.sio = socketio.AsyncClient(reconnection=False)
        self.current: UiAnswer | None = None
        self._task_ends = 0  # task_end events so far: one per finished handler
        self._task_ended = asyncio.Event()
        self.messages: list[dict] = []
        self.actions: list[dict] = []  # buttons the server attached to messages (`forId` names the message)
        self.session_id = str(uuid.uuid4())
        self.cookie = ""
        self.sio.on("action", self.actions.append)
        self.sio.on("stream_start", self._on_stream_start)
        self.sio.on("stream_token", self._on_token)
        self.sio.on("new_message", self._on_message)
        self.sio.on("update_message", self._on_message)
        self.sio.on("task_end", self._on_task_end)
        self.sio.on("first_interaction", self._on_first_interaction)

    async def login(self) -> str:
        """The cookie header of a logged-in browser."""
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as http:
            if self.user:
                response = await http.post("/login", data={"username": self.user, "password": self.password})
            else:
                response = await http.post("/auth/header")
            response.raise_for_status()
            return "; ".join(f"{k}={v}" for k, v in http.cookies.items())

    async def connect(self) -> None:
        cookie = self.cookie = await self.login()
        auth = {"sessionId": self.session_id, "clientType": "webapp", "userEnv": "{}"}
        if self.resume_id:
            auth["threadId"] = self.resume_id
        await self.sio.connect(
            self.url,
            socketio_path="/ws/socket.io",
            auth=auth,
            transports=["websocket"],
            headers={"Cookie": cookie},
            wait_timeout=60,
        )  # 1 s by default: too short under load
        await self.sio.emit("connection_successful")
        # The server answers connection_successful with a task_end, then runs on_chat_start (or
        # on_chat_resume, for a thread id) as a task of its own, which ends with a second one. Wait
        # for both, so that neither is mistaken for the end of our first question: under load the
        # start hook can take seconds.
        await self._wait_task_ends(2, timeout=120)

    async def __aenter__(self) -> ChainlitSession:
        try:
            await self.connect()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def ask(self, text: str, *, timeout: float = 300) -> UiAnswer:
        """Send one message and wait until the app's handler has finished with it."""
        self.current = UiAnswer(sent_at=time.perf_counter())
        before = self._task_ends
        await self.send(text)
        await self._wait_task_ends(before + 1, timeout=timeout)
        return self.current

    async def _wait_task_ends(self, count: int, *, timeout: float) -> None:
        async def reached() -> None:
            while self._task_ends < count:
                self._task_ended.clear()
                await self._task_ended.wait()

        await asyncio.wait_for(reached(), timeout)

    async def send(self, text: str) -> None:
        payload = {
            "message": {
                "id": str(uuid.uuid4()),
                "threadId": "",
                "name": "User",
                "type": "user_message",
                "output": text,
                "createdAt": datetime.now(UTC).isoformat(),
            },
            "fileReferences": [],
        }
        await self.sio.emit("client_message", payload)

    async def click(self, action: dict, *, timeout: float = 300) -> None:
        """Press an action button as the page does (POST /project/action); returns when its callback has."""
        async with httpx.AsyncClient(base_url=self.url, timeout=timeout, headers={"Cookie": self.cookie}) as http:
            response = await http.post("/project/action", json={"sessionId": self.session_id, "action": action})
            response.raise_for_status()

    async def _on_stream_start(self, data: dict) -> None:
        """A streamed message's or step's first update: it carries the first text, which the page shows."""
        if self.current is not None and data.get("output"):
            self.current.token_times.append(time.perf_counter())

    async def _on_token(self, data: dict) -> None:
        if self.current is not None and not data.get("isSequence") and not data.get("isInput"):
            self.current.token_times.append(time.perf_counter())

    async def _on_message(self, data: dict) -> None:
        self.messages.append(data)
        if self.current is not None and data.get("type") == "assistant_message":
            self.current.texts[data["id"]] = data.get("output", "")

    async def _on_first_interaction(self, data: dict) -> None:
        self.thread_id = data.get("thread_id") or self.thread_id

    async def _on_task_end(self, _data: object = None) -> None:
        self._task_ends += 1
        self._task_ended.set()

    async def close(self) -> None:
        await self.sio.disconnect()
