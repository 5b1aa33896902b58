"""Contenders of a blind comparison: named setups (server, model, sampling, system prompt, thinking).

Defined in a TOML file (RCHAT_CONTENDERS_FILE, `contenders.toml` by default; see
contenders.example.toml): a list of `[[contender]]` tables and an optional `pair = [A, B]` naming
the two a comparison uses (else the first two). Any field left out takes the chat's current value.
Without a file the built-in pair is two samples of the chat's current settings.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from backend.chat.sampling import Sampling
from backend.errors import SettingsError
from backend.settings import Settings


class Contender(BaseModel):
    """One named setup; empty or missing fields take the chat's (or the app's) current value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=60)
    base_url: str = ""  # an OpenAI-compatible server; empty = the app's own server
    api_key_env: str = ""  # the environment variable that holds that server's key
    model: str = ""  # the name the server serves the model under; empty = the app's
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    system_prompt: str | None = None
    thinking: bool | None = None
    seed: int | None = Field(None, ge=0, lt=2**31)

    def sampling(self, current: Sampling) -> Sampling:
        wanted = {
            k: getattr(self, k)
            for k in ("temperature", "top_p", "max_tokens", "system_prompt", "thinking", "seed")
            if getattr(self, k) is not None
        }
        return replace(current, **wanted)

    def settings(self, app: Settings) -> Settings:
        """The app's settings pointed at this contender's server and model."""
        update: dict[str, object] = {}
        if self.base_url:
            update["base_url"] = self.base_url.rstrip("/").removesuffix("/v1")
            update["api_key"] = SecretStr(os.environ.get(self.api_key_env, "") if self.api_key_env else "")
        if self.model:
            update["served_model_name"] = self.model
        return app.model_copy(update=update) if update else app


# The built-in pairs, by the composer option that picks them. A second real model was tried and does
# not chat (docs/second-model.md), so the second pair is two setups of the served model.
BUILT_IN = {
    "samples": (Contender(name="current settings · sample 1"), Contender(name="current settings · sample 2")),
    "greedy": (
        Contender(name="greedy (temperature 0)", temperature=0.0),
        Contender(name="sampled (temperature 0.9)", temperature=0.9),
    ),
}


def built_in_pair(which: str = "samples") -> tuple[Contender, Contender]:
    return BUILT_IN[which]


def load_pair(path: Path | None) -> tuple[Contender, Contender]:
    """The file's pair (two samples without a file); raises SettingsError with one line that says what to fix."""
    if path is None or not path.exists():
        return built_in_pair()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise SettingsError(f"{path.name}: cannot be read as TOML ({err})") from None
    contenders = [_contender(path, i, raw) for i, raw in enumerate(data.get("contender") or [], start=1)]
    names = [c.name for c in contenders]
    if len(set(names)) != len(names):
        raise SettingsError(f"{path.name}: two contenders share a name; each needs its own")
    pair = data.get("pair") or names[:2]
    if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(names):
        raise SettingsError(
            f"{path.name}: `pair` must name two different contenders defined in the file "
            f"(defined: {', '.join(names) or 'none'})"
        )
    by_name = {c.name: c for c in contenders}
    return by_name[pair[0]], by_name[pair[1]]


def _contender(path: Path, number: int, raw: object) -> Contender:
    try:
        return Contender.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "entry"
        label = raw.get("name", number) if isinstance(raw, dict) else number
        raise SettingsError(f"{path.name}: contender {label}: {field}: {first['msg']}") from None
