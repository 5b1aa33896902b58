"""Chainlit hooks only: the chat logic lives in backend/."""

import chainlit as cl

from backend.chat_client import make_client, stream_chat
from backend.errors import user_message
from backend.settings import load_settings

settings = load_settings()
client = make_client(settings, api_key=settings.api_key.get_secret_value())


@cl.on_chat_start
async def start() -> None:
    cl.user_session.set("history", [])


@cl.on_message
async def on_message(message: cl.Message) -> None:
    history = cl.user_session.get("history")
    history.append({"role": "user", "content": message.content})
    reply = cl.Message(content="")
    request = {"model": settings.resolved_served_name, "messages": history, "temperature": 0.2}
    try:
        async for delta in stream_chat(client, settings, request):
            if delta.answer:
                await reply.stream_token(delta.answer)
    except Exception as exc:  # noqa: BLE001 - shown as our own words, never a stack trace
        await cl.Message(content=user_message(exc)).send()
    await reply.send()
    history.append({"role": "assistant", "content": reply.content})
