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
from backend.qa.compare.contenders import BUILT_IN
from backend.settings import Settings

ANSWER, ONE, COMPARE = "answer", "one", "compare"
THINKING, BUDGET, EFFORT = "thinking", "budget", "effort"
BUDGETS = (256, 1024, 4096)
EFFORTS = ("low", "medium", "high")
NO_CAP, MODEL_DEFAULT = "none", "default"


def answer_mode(settings: Settings) -> cl.Mode:
    """One answer, or a blind comparison of a pair: the contenders file's, or a built-in one."""
    options = [
        cl.ModeOption(
            id=ONE, name="One answer", description="The model answers, as usual", icon="message-square", default=True
        )
    ]
    if settings.contenders_file is not None and settings.contenders_file.exists():
        options.append(
            cl.ModeOption(
                id=COMPARE,
                name="Compare: your contenders",
                icon="columns-2",
                description=f"The pair in {settings.contenders_file.name}, blind until you vote",
            )
        )
    options += [
        cl.ModeOption(
            id="samples",
            name="Compare: two samples",
            icon="columns-2",
            description="Two samples of this chat's settings, blind until you vote",
        ),
        cl.ModeOption(
            id="greedy",
            name="Compare: greedy vs sampled",
            icon="columns-2",
            description="Temperature 0 against 0.9, blind until you vote",
        ),
    ]
    return cl.Mode(id=ANSWER, name="Answer", options=options)


def thinking_modes(settings: Settings, sampling: Sampling) -> list[cl.Mode]:
    """The thinking pickers, set to the chat's current values."""
    modes = [_thinking_mode(sampling), _budget_mode(sampling)]
    if chat_template_takes(settings.resolved_model, "reasoning_effort") and not settings.external:
        modes.append(_effort_mode(sampling))
    return modes


def _option(
    id_: str, name: str, chosen: bool, description: str | None = None, icon: str | None = None
) -> cl.ModeOption:
    return cl.ModeOption(id=id_, name=name, default=chosen, description=description, icon=icon)


def _thinking_mode(sampling: Sampling) -> cl.Mode:
    return cl.Mode(
        id=THINKING,
        name="Thinking",
        options=[
            _option("on", "Thinking on", sampling.thinking, "Reasoning models think before they answer", "brain"),
            _option(
                "off",
                "Thinking off",
                not sampling.thinking,
                "Answer at once (chat_template_kwargs.enable_thinking = false)",
                "zap",
            ),
        ],
    )


def _budget_mode(sampling: Sampling) -> cl.Mode:
    capped = [
        _option(
            str(n),
            f"Think ≤ {n} tokens",
            sampling.thinking_budget == n,
            "A hard cap; the server needs a reasoning parser",
        )
        for n in BUDGETS
    ]
    return cl.Mode(
        id=BUDGET,
        name="Thinking budget",
        options=[
            _option(NO_CAP, "No cap", sampling.thinking_budget is None, "Think as long as the token limit allows"),
            *capped,
        ],
    )


def _effort_mode(sampling: Sampling) -> cl.Mode:
    chosen = [_option(e, f"Effort: {e}", sampling.reasoning_effort == e) for e in EFFORTS]
    return cl.Mode(
        id=EFFORT,
        name="Reasoning effort",
        options=[_option(MODEL_DEFAULT, "Effort: model default", sampling.reasoning_effort is None), *chosen],
    )


def composer_modes(settings: Settings, sampling: Sampling) -> list[cl.Mode]:
    return [answer_mode(settings)] + ([] if settings.kiosk else thinking_modes(settings, sampling))


def with_modes(sampling: Sampling, modes: dict[str, str] | None, settings: Settings) -> Sampling:
    """The chat's sampling with the thinking options a message was sent with (none in booth mode)."""
    modes = modes or {}
    if settings.kiosk:
        return sampling
    thinking, budget, effort = sampling.thinking, sampling.thinking_budget, sampling.reasoning_effort
    if modes.get(THINKING) in ("on", "off"):
        thinking = modes[THINKING] == "on"
    if (picked := modes.get(BUDGET)) is not None:
        budget = int(picked) if picked.isdigit() and int(picked) in BUDGETS else None
    if (picked := modes.get(EFFORT)) is not None:
        effort = picked if picked in EFFORTS else None
    return replace(sampling, thinking=thinking, thinking_budget=budget, reasoning_effort=effort)


def compared_pair(message: cl.Message) -> str | None:
    """Which pair a message is to be compared by ("compare": the file's; "samples", "greedy": built in),
    None for one answer."""
    chosen = (message.modes or {}).get(ANSWER)
    return chosen if chosen in (COMPARE, *BUILT_IN) else None
