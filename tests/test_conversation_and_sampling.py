"""Our own history (trimming, edits, input cleaning) and the settings panel's validation."""

from __future__ import annotations

from backend.chat.conversation import Conversation, clean_user_text, estimate_tokens
from backend.chat.sampling import apply_update, default_sampling, request_params
from tests.conftest import make_settings


def test_oldest_turns_are_dropped_first_to_fit_the_context() -> None:
    conv = Conversation()
    for i in range(10):
        conv.add_user(f"question {i} " + "x" * 300)
        conv.add_assistant(f"answer {i} " + "y" * 300)
    conv.add_user("the last question")
    messages, dropped = conv.messages(system_prompt="be brief", context_tokens=1000, answer_tokens=200)
    assert dropped > 0
    assert messages[0] == {"role": "system", "content": "be brief"}
    assert messages[1]["role"] == "user"  # never starts with a dangling answer
    assert messages[-1]["content"] == "the last question"
    assert sum(estimate_tokens(m["content"]) for m in messages) <= 800
    kept = [m["content"].split()[1] for m in messages[1:-1:2]]
    assert kept == sorted(kept)  # the newest turns are the ones kept, in order


def test_nothing_is_dropped_when_it_fits() -> None:
    conv = Conversation()
    conv.add_user("hi")
    conv.add_assistant("hello")
    conv.add_user("how are you?")
    messages, dropped = conv.messages(system_prompt="", context_tokens=4096, answer_tokens=512)
    assert dropped == 0 and [m["role"] for m in messages] == ["user", "assistant", "user"]


def test_an_edited_question_replaces_everything_after_it() -> None:
    conv = Conversation()
    conv.add_user("first", "m1")
    conv.add_assistant("a1")
    conv.add_user("second", "m2")
    conv.add_assistant("a2")
    conv.add_user("first, edited", "m1")
    assert [t.content for t in conv.turns] == ["first, edited"]


def test_control_characters_and_lone_surrogates_are_removed() -> None:
    text, removed = clean_user_text("a\x00b\x07c\td\ne\ud800f")
    assert (text, removed) == ("abc\td\nef", 3)


def test_panel_values_out_of_range_are_refused_and_kept(tmp_path) -> None:
    settings = make_settings(tmp_path)
    current = default_sampling(settings)
    new, problems = apply_update(
        current, {"temperature": 3, "top_p": 0.5, "max_tokens": 999999, "seed": "abc", "thinking": False}, settings
    )
    assert new.temperature == current.temperature and new.max_tokens == current.max_tokens
    assert new.top_p == 0.5 and new.thinking is False and new.seed is None
    joined = "; ".join(problems)
    assert "temperature must be between 0 and 2" in joined
    assert "max tokens must be a whole number from 1 to" in joined and "seed must be empty" in joined


def test_request_parameters_say_everything_explicitly(tmp_path) -> None:
    settings = make_settings(tmp_path)
    sampling, problems = apply_update(default_sampling(settings), {"seed": "42", "thinking": False}, settings)
    params = request_params(sampling)
    assert not problems and params["seed"] == 42
    assert params["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}
    assert {"temperature", "top_p", "max_tokens"} <= params.keys()
