"""Facts read from a served model's directory (no server needed): its generation defaults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Keys of generation_config.json that change sampling when a request leaves them out.
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
                 "frequency_penalty", "max_new_tokens")


def generation_config(model_path: str) -> dict[str, Any]:
    """The sampling keys of the model's generation_config.json, which vLLM applies by default."""
    try:
        data = json.loads((Path(model_path) / "generation_config.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: data[k] for k in SAMPLING_KEYS if k in data}
