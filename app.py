"""Chainlit hooks only: every decision lives in backend/ (backend/page renders, the rest is plain Python)."""

import asyncio

import chainlit as cl
from chainlit.config import config
from chainlit.server import sio

from backend.answers.grading.question_set import starters
from backend.chat.client import make_client
from backend.chat.conversation import Conversation, clean_user_text
from backend.chat.health import is_healthy, server_warning
from backend.chat.input_check import input_problem
from backend.chat.sampling import apply_update, default_sampling, max_tokens_limit
from backend.page.actions import answer_actions, send_export
from backend.page.answer_flow import answer
from backend.page.board_view import COMMAND as BOARD
from backend.page.board_view import board_command, send_board
from backend.page.booth import dress_page, shows_settings_panel, uses_password_login
from backend.page.chat_state import ChatState, chat_state, start_chat
from backend.page.compare_flow import cast_vote, compare
from backend.page.compare_view import restore as restore_comparisons
from backend.page.composer import compared_pair, composer_modes, with_modes
from backend.page.follow import follow
from backend.page.history_layer import history_layer
from backend.page.notices import guarded, notice, watch_backend
from backend.page.remote_stop import ask_stop
from backend.page.replay_view import send_replay
from backend.page.runs_view import COMMAND as RUNS
from backend.page.runs_view import runs_command, send_runs
from backend.page.services import PageServices
from backend.page.settings_panel import settings_widgets
from backend.qa.accounts import LOCAL_USER, check_password
from backend.qa.setup import set_up
from backend.settings import load_settings

settings = load_settings()
qa = set_up(settings)
store = history_layer(settings) if qa.history else None  # Chainlit's data layer on the history
client = make_client(settings, api_key=settings.api_key.get_secret_value())
services = PageServices.create(settings, client)  # health checks, live strip, followed answers...
_ = client.chat.completions  # openai imports its resources lazily: pay that at start, not on the first answer
config.ui.name = settings.resolved_served_name  # the page title and the answers' author: the model
dress_page(config.ui, settings)  # the live strip on every page; booth mode (RCHAT_KIOSK)
# socket.io drops the connection on a message over 1 MB (its default); take up to 8 MB so that a huge
# paste reaches on_message and gets a clear "too long" answer instead of a dead page.
sio.eio.max_http_buffer_size = 8_000_000


if store is not None:

    @cl.data_layer
    def history_store():
        return store


if uses_password_login(settings, has_users=qa.passwords):

    @cl.password_auth_callback
    async def password_login(name: str, password: str) -> cl.User | None:
        return cl.User(identifier=name) if await check_password(qa.users, name, password) else None
else:

    @cl.header_auth_callback
    async def local_login(_headers) -> cl.User:
        return cl.User(identifier=LOCAL_USER)  # no users, or a booth: the single local user, no form


@cl.on_app_startup
async def app_startup() -> None:
    services.start()  # the live strip's one /metrics poller for every page this process serves


@cl.on_app_shutdown
async def app_shutdown() -> None:
    await services.close()
    await client.close()  # its aiohttp session, closed in its own loop (else a warning at exit)


@cl.set_chat_profiles
async def chat_profiles(_user=None, _language=None) -> list[cl.ChatProfile]:
    # One profile with an icon: Chainlit then shows its description on the welcome screen.
    return [
        cl.ChatProfile(
            name=settings.resolved_served_name,
            default=True,
            icon="/public/model.svg",
            markdown_description=f"**{settings.resolved_served_name}** · served by vLLM · "
            "ask a question or pick an example",
        )
    ]


@cl.set_starters
async def set_starters(_user=None, _language=None) -> list[cl.Starter]:
    return [cl.Starter(label=q.label, message=q.question) for q in starters()]


def init_session(conversation: Conversation | None = None) -> ChatState:
    """Per-chat state; also called from on_message, which can win the race against on_chat_start."""
    state = chat_state()
    if conversation is not None or state is None:
        state = start_chat(default_sampling(settings), conversation)
    return state


async def open_chat(state: ChatState) -> None:
    await cl.context.emitter.set_modes(composer_modes(settings, state.sampling))
    if store is not None:
        await cl.context.emitter.set_commands([board_command(), runs_command()])
    if shows_settings_panel(settings):
        await cl.ChatSettings(settings_widgets(state.sampling, max_tokens_limit(settings))).send()
    if qa.history_off_reason:
        await notice(qa.history_off_reason)
    if not await is_healthy(settings, checker=services.health):
        await watch_backend(settings, health=services.health)  # a notice of how its start goes, kept up to date
    elif warning := server_warning(settings):
        await notice(warning)


@cl.on_chat_start
@guarded
async def start() -> None:
    await open_chat(init_session())


@cl.on_chat_resume
@guarded
async def resume(thread: dict) -> None:
    """An earlier chat from the sidebar: the model sees its questions and answers again."""
    state = init_session(Conversation.from_steps(thread.get("steps") or []))
    resumed = asyncio.Event()  # Chainlit sends the tab the stored chat once this hook returns
    try:
        await restore_comparisons(thread, state.comparisons)
        await follow(thread, answers=services.live, settings=settings, state=state, resumed=resumed)
        state.sampling, _ = apply_update(state.sampling, cl.user_session.get("chat_settings") or {}, settings)
        await open_chat(state)
    finally:
        resumed.set()


@cl.on_settings_update
@guarded
async def settings_update(values: dict) -> None:
    state = init_session()
    state.sampling, problems = apply_update(state.sampling, values, settings)
    if problems:
        await notice("Some settings were not changed: " + "; ".join(problems) + ".")


@cl.on_stop
async def stop() -> None:
    if (state := chat_state()) is not None and state.stop is not None:
        state.stop.set()  # Chainlit also cancels the task; this covers a lost cancel
    if state is not None and state.following is not None and not state.following.done():
        await ask_stop(cl.context.session.thread_id)  # another page process streams it


def busy_elsewhere(state: ChatState) -> bool:
    if state.busy_elsewhere():
        cl.context.session.current_task = state.busy  # so Stop still stops the answer in progress
        return True
    return False


@cl.on_message
@guarded
async def on_message(message: cl.Message) -> None:
    state = init_session()
    if message.command == BOARD:
        await send_board(settings, history_off_reason=qa.history_off_reason)
        return
    if message.command == RUNS:
        await send_runs(message.content or "")
        return
    if busy_elsewhere(state):
        await notice("Still answering your previous message: wait for it, or press Stop first.")
        return
    text, removed = clean_user_text(message.content or "")
    problem = input_problem(text, settings, state.sampling)
    if problem:
        await notice(problem)
        return
    if removed:
        await notice(f"{removed} control character(s) were removed from your message.")
    state.sampling = with_modes(state.sampling, message.modes, settings)
    if (pair := compared_pair(message)) is not None:
        await respond_compare(state, text, pair)
        return
    state.conversation.add_user(text, message.id)
    await respond(state, sample=1)


@cl.action_callback("regenerate")
@guarded
async def regenerate(action: cl.Action) -> None:
    """Sample the last answer again; the earlier sample stays on the page and in the history."""
    state = init_session()
    if busy_elsewhere(state):
        await notice("Still answering: wait for it, or press Stop first.")
        return
    conversation = state.conversation
    if conversation.turns and conversation.turns[-1].role == "assistant":
        conversation.turns.pop()
    if not conversation.turns:
        await notice("There is no question to answer again: ask one first.")
        return
    async with cl.Step(name="regenerate", type="run"):  # a run, so the new answer gets feedback buttons too
        await respond(state, sample=int(action.payload.get("sample", 1)) + 1)


@cl.action_callback("battle_vote")
@guarded
async def battle_vote(action: cl.Action) -> None:
    user = cl.context.session.user
    await cast_vote(action.payload, views=init_session().comparisons, user=user.identifier if user else "")


@cl.action_callback("export")
@guarded
async def export_chat(_action: cl.Action) -> None:
    await send_export(settings, thread_id=cl.context.session.thread_id, history_off_reason=qa.history_off_reason)


@cl.action_callback("replay")
@guarded
async def replay_answer(action: cl.Action) -> None:
    """Send the answer's stamped request again and post the comparison (backend/page/replay_view.py)."""
    if busy_elsewhere(init_session()):
        await notice("Still answering: wait for it (a replay beside it would not be comparable), then replay.")
        return
    await send_replay(
        client,
        settings,
        thread_id=cl.context.session.thread_id,
        answer_id=action.forId or "",
        history_off_reason=qa.history_off_reason,
    )


async def respond(state: ChatState, *, sample: int) -> None:
    """Answer the conversation's last question; only the newest answer keeps Regenerate and Export."""
    stop = state.begin()
    for old in state.actions:
        if isinstance(old, cl.Action) and old.name != "replay":  # every stored answer can be replayed
            await old.remove()
    thread_id = cl.context.session.thread_id
    with services.live.streaming(thread_id, stop) as shown:
        result = await answer(
            client=client,
            settings=settings,
            conversation=state.conversation,
            sampling=state.sampling,
            sample=sample,
            stop_requested=stop.is_set,
            actions=lambda: answer_actions(sample),
            session_id=thread_id,
            shown=shown,
            services=services,
        )
        await shown.ended()
    state.actions = result.message.actions if result.message is not None else []
    if result.text:
        state.conversation.add_assistant(result.text)


async def respond_compare(state: ChatState, question: str, pair: str) -> None:
    """Compare mode: the question to both contenders, side by side, blind until the vote."""
    stop = state.begin()
    await compare(
        question,
        pair,
        settings=settings,
        sampling=state.sampling,
        services=services,
        views=state.comparisons,
        stop_requested=stop.is_set,
        session_id=cl.context.session.thread_id,
    )
