"""Regenerates .env.example from the settings' own descriptions: `.venv/bin/python scripts/write_env_example.py`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from backend.settings import PROJECT_ROOT, Settings

SECTIONS = {
    "model": "The model",
    "base_url": "Where vLLM runs",
    "gpu_memory_utilization": "vLLM tuning (empty = vLLM's or the machine's default)",
    "ui_host": "The chat page",
    "connect_timeout": "The client",
    "default_system_prompt": "Defaults of the per-chat settings panel",
    "kiosk": "Booth mode (a kiosk screen at a demo booth)",
}


def main() -> None:
    out = [
        "# Every setting of the app. Copy to .env and change what you need; an empty value means the default.",
        "# Each key is RCHAT_ + the setting's name. A bad value stops start-up with a line that names it.",
    ]
    for name, field in Settings.model_fields.items():
        if name in SECTIONS:
            out += ["", f"# --- {SECTIONS[name]} ---"]
        default = field.get_default(call_default_factory=True)
        default = default.get_secret_value() if hasattr(default, "get_secret_value") else default
        if isinstance(default, Path) and default.is_relative_to(PROJECT_ROOT):  # not this checkout's own path
            default = default.relative_to(PROJECT_ROOT)
        if name == "log_dir":
            default = ".cache/logs"
        text = "" if default in (None, {}, []) else str(default).lower() if isinstance(default, bool) else str(default)
        out += [f"# {field.description}", f"RCHAT_{name.upper()}={text}"]
    (PROJECT_ROOT / ".env.example").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
