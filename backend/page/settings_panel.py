"""The per-chat settings panel, filled with this chat's current values (thinking is in the composer)."""

from __future__ import annotations

from chainlit.input_widget import NumberInput, Slider, TextInput

from backend.chat.sampling import Sampling


def settings_widgets(sampling: Sampling, max_tokens: int) -> list:
    return [
        TextInput(
            id="system_prompt",
            label="System prompt",
            initial=sampling.system_prompt,
            multiline=True,
            placeholder="Empty: the model's own default",
        ),
        Slider(id="temperature", label="Temperature", initial=sampling.temperature, min=0, max=2, step=0.05),
        Slider(id="top_p", label="Top-p", initial=sampling.top_p, min=0.05, max=1, step=0.05),
        NumberInput(id="max_tokens", label=f"Max tokens (1-{max_tokens})", initial=sampling.max_tokens),
        TextInput(
            id="seed", label="Seed (empty = random)", initial="" if sampling.seed is None else str(sampling.seed)
        ),
    ]
