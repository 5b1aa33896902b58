"""The composer's pickers: thinking on/off, a thinking budget and reasoning effort become the chat's sampling."""

from __future__ import annotations

from pathlib import Path

from backend.chat.sampling import default_sampling
from backend.page.composer import EFFORT, composer_modes, with_modes
from tests.conftest import make_settings


def test_the_pickers_set_thinking_budget_and_effort_and_ignore_what_they_do_not_offer(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    start = default_sampling(settings)
    picked = with_modes(start, {"thinking": "on", "budget": "1024", "effort": "high", "answer": "one"}, settings)
    assert (picked.thinking, picked.thinking_budget, picked.reasoning_effort) == (True, 1024, "high")
    back = with_modes(picked, {"thinking": "off", "budget": "none", "effort": "default"}, settings)
    assert (back.thinking, back.thinking_budget, back.reasoning_effort) == (False, None, None)
    assert with_modes(picked, {"budget": "77", "effort": "extreme"}, settings).thinking_budget is None
    assert with_modes(picked, None, settings) == picked


def test_booth_mode_shows_only_the_answer_picker_and_keeps_the_operators_thinking(tmp_path: Path) -> None:
    booth = make_settings(tmp_path, kiosk=True, default_thinking_budget=256)
    sampling = default_sampling(booth)
    assert [m.id for m in composer_modes(booth, sampling)] == ["answer"]
    assert with_modes(sampling, {"thinking": "off", "budget": "none"}, booth) == sampling
    assert sampling.thinking_budget == 256


def test_effort_is_offered_only_where_the_chat_template_takes_it(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer_config.json").write_text('{"chat_template": "{{ messages }}"}')
    plain = make_settings(tmp_path, model=str(model))
    assert EFFORT not in [m.id for m in composer_modes(plain, default_sampling(plain))]
    (model / "chat_template.jinja").write_text("{% if reasoning_effort %}{{ reasoning_effort }}{% endif %}")
    assert EFFORT in [m.id for m in composer_modes(plain, default_sampling(plain))]
