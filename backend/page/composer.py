"""The composer's pickers: how to answer (one answer or a blind comparison) and how to think.

Thinking on/off, a thinking budget (vLLM's thinking_token_budget: a hard cap, which the server
honours only with a reasoning parser) and, where the model's chat template takes it, a reasoning
effort. Each message carries the options it was sent with; they become the chat's sampling. In
booth mode only the answer picker shows: the operator sets thinking in .env.
"""

from __future__ import annotations

from dataclasses import replace

import chainlit as cl

from backend.chat.sampling import Sampling
from backend.model_info import chat_template_takes
from backend.settings import Settings

ANSWER, ONE, COMPARE = "answer", "one", "compare"
THINKING, BUDGET, EFFORT = "thinking", "budget", "effort"
BUDGETS = (256, 1024, 4096)
EFFORTS = ("low", "medium", "high")
NO_CAP, MODEL_DEFAULT = "none", "default"


def answer_mode() -> cl.Mode:
    return cl.Mode(id=ANSWER, name="Answer", options=[
        cl.ModeOption(id=ONE, name="One answer", description="The model answers, as usual", icon="message-square",
                      default=True),
        cl.ModeOption(id=COMPARE, name="Compare (blind A/B)", icon="columns-2",
                      description="Two answers side by side, names hidden until you vote")])


def thinking_modes(settings: Settings, sampling: Sampling) -> list[cl.Mode]:
    """The thinking pickers, set to the chat's current values."""
    modes = [
        cl.Mode(id=THINKING, name="Thinking", options=[
            cl.ModeOption(id="on", name="Thinking on", icon="brain", default=sampling.thinking,
                          description="Reasoning models think before they answer"),
            cl.ModeOption(id="off", name="Thinking off", icon="zap", default=not sampling.thinking,
                          description="Answer at once (chat_template_kwargs.enable_thinking = false)")]),
        cl.Mode(id=BUDGET, name="Thinking budget", options=[
            cl.ModeOption(id=NO_CAP, name="No cap", default=sampling.thinking_budget is None,
                          description="Think as long as the token limit allows"),
            *(cl.ModeOption(id=str(n), name=f"Think ≤ {n} tokens", default=sampling.thinking_budget == n,
                            description="A hard cap; the server needs a reasoning parser") for n in BUDGETS)])]
    if chat_template_takes(settings.resolved_model, "reasoning_effort") and not settings.external:
        modes.append(cl.Mode(id=EFFORT, name="Reasoning effort", options=[
            cl.ModeOption(id=MODEL_DEFAULT, name="Effort: model default", default=sampling.reasoning_effort is None),
            *(cl.ModeOption(id=e, name=f"Effort: {e}", default=sampling.reasoning_effort == e) for e in EFFORTS)]))
    return modes


def composer_modes(settings: Settings, sampling: Sampling) -> list[cl.Mode]:
    return [answer_mode()] + ([] if settings.kiosk else thinking_modes(settings, sampling))


def with_modes(sampling: Sampling, modes: dict[str, str] | None, settings: Settings) -> Sampling:
    """The chat's sampling with the thinking options a message was sent with (none in booth mode)."""
    modes = modes or {}
    if settings.kiosk:
        return sampling
    updates: dict[str, object] = {}
    if modes.get(THINKING) in ("on", "off"):
        updates["thinking"] = modes[THINKING] == "on"
    if (budget := modes.get(BUDGET)) is not None:
        updates["thinking_budget"] = int(budget) if budget.isdigit() and int(budget) in BUDGETS else None
    if (effort := modes.get(EFFORT)) is not None:
        updates["reasoning_effort"] = effort if effort in EFFORTS else None
    return replace(sampling, **updates)


def wants_compare(message: cl.Message) -> bool:
    return (message.modes or {}).get(ANSWER) == COMPARE
