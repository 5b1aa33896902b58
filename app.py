"""Chainlit hooks only: every decision lives in backend/ (chat_view renders, the rest is plain Python)."""

import asyncio

import chainlit as cl
from chainlit.config import config
from chainlit.server import sio

from backend import chat_view
from backend.backend_state import describe_down, is_healthy
from backend.chat_client import make_client
from backend.conversation import Conversation, clean_user_text
from backend.question_set import starters
from backend.sampling import apply_update, default_sampling, max_tokens_limit
from backend.settings import load_settings

settings = load_settings()
client = make_client(settings, api_key=settings.api_key.get_secret_value())
_ = client.chat.completions  # openai imports its resources lazily: pay that at start, not on the first answer
config.ui.name = settings.resolved_served_name  # the page title and the answers' author: the model
# socket.io drops the connection on a message over 1 MB (its default); take up to 8 MB so that a huge
# paste reaches on_message and gets a clear "too long" answer instead of a dead page.
sio.eio.max_http_buffer_size = 8_000_000


@cl.set_chat_profiles
async def chat_profiles(_user=None, _language=None) -> list[cl.ChatProfile]:
    # One profile with an icon: Chainlit then shows its description on the welcome screen.
    return [cl.ChatProfile(name=settings.resolved_served_name, default=True, icon="/public/model.svg",
                           markdown_description=f"**{settings.resolved_served_name}** · served by vLLM · "
                                                "ask a question or pick an example")]


@cl.set_starters
async def set_starters(_user=None, _language=None) -> list[cl.Starter]:
    return [cl.Starter(label=q.label, message=q.question) for q in starters()]


def init_session() -> None:
    """Per-chat state; also called from on_message, which can win the race against on_chat_start."""
    if cl.user_session.get("conversation") is None:
        cl.user_session.set("conversation", Conversation())
        cl.user_session.set("sampling", default_sampling(settings))
        cl.user_session.set("busy", None)


@cl.on_chat_start
async def start() -> None:
    init_session()
    sampling = cl.user_session.get("sampling")
    await cl.ChatSettings(chat_view.settings_widgets(sampling, max_tokens_limit(settings))).send()
    if not await is_healthy(settings):
        await chat_view.notice(describe_down(settings))


@cl.on_settings_update
async def settings_update(values: dict) -> None:
    sampling, problems = apply_update(cl.user_session.get("sampling"), values, settings)
    cl.user_session.set("sampling", sampling)
    if problems:
        await chat_view.notice("Some settings were not changed: " + "; ".join(problems) + ".")


@cl.on_stop
async def stop() -> None:
    cl.user_session.set("stop", True)  # Chainlit also cancels the task; this covers a lost cancel


@cl.on_message
async def on_message(message: cl.Message) -> None:
    init_session()
    busy = cl.user_session.get("busy")
    if busy is not None and not busy.done():
        cl.context.session.current_task = busy  # so Stop still stops the answer in progress
        await chat_view.notice("Still answering your previous message: wait for it, or press Stop first.")
        return
    text, removed = clean_user_text(message.content or "")
    problem = chat_view.input_problem(text, settings, cl.user_session.get("sampling"))
    if problem:
        await chat_view.notice(problem)
        return
    if removed:
        await chat_view.notice(f"{removed} control character(s) were removed from your message.")
    cl.user_session.set("busy", asyncio.current_task())
    cl.user_session.set("stop", False)
    conversation = cl.user_session.get("conversation")
    conversation.add_user(text, message.id)
    result = await chat_view.answer(client=client, settings=settings, conversation=conversation,
                                    sampling=cl.user_session.get("sampling"),
                                    stop_requested=lambda: cl.user_session.get("stop"))
    if result["answer"]:
        conversation.add_assistant(result["answer"])
