"""Compare's contenders file: what it defines, the built-in pair without it, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.chat.conversation import Conversation
from backend.chat.sampling import Sampling
from backend.errors import SettingsError
from backend.qa.compare.comparison import cast
from backend.qa.compare.contenders import built_in_pair, load_pair
from backend.records import RECORD_KEY
from tests.conftest import make_settings

CURRENT = Sampling(system_prompt="", temperature=0.3, top_p=0.9, max_tokens=256, thinking=False, seed=None)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "contenders.toml"
    path.write_text(text)
    return path


def test_without_a_file_two_samples_of_the_current_settings_compete(tmp_path: Path) -> None:
    a, b = load_pair(tmp_path / "absent.toml")
    assert (a, b) == built_in_pair() and a.name != b.name
    assert a.sampling(CURRENT) == CURRENT and b.settings(make_settings(tmp_path)).server_url.startswith("http")


def test_a_file_names_the_pair_and_fields_left_out_keep_the_chats_values(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OTHER_KEY", "secret")
    path = write(
        tmp_path,
        'pair = ["b", "a"]\n[[contender]]\nname = "a"\ntemperature = 0.0\n'
        '[[contender]]\nname = "b"\nbase_url = "http://other:9000/v1"\napi_key_env = "OTHER_KEY"\n'
        'model = "big"\nsystem_prompt = "Be brief."\n',
    )
    first, second = load_pair(path)
    assert (first.name, second.name) == ("b", "a")
    assert second.sampling(CURRENT).temperature == 0.0 and second.sampling(CURRENT).top_p == 0.9
    other = first.settings(make_settings(tmp_path))
    assert other.server_url == "http://other:9000" and other.resolved_served_name == "big"
    assert other.api_key.get_secret_value() == "secret" and first.sampling(CURRENT).system_prompt == "Be brief."


@pytest.mark.parametrize(
    "text, words",
    [
        ('[[contender]]\nname = "a"\ntemperature = 5\n[[contender]]\nname = "b"\n', "contender a: temperature"),
        ('[[contender]]\nname = "a"\ncolour = 1\n', "contender a: colour"),
        ('[[contender]]\nname = "a"\n[[contender]]\nname = "a"\n', "share a name"),
        ('pair = ["a", "z"]\n[[contender]]\nname = "a"\n[[contender]]\nname = "b"\n', "defined: a, b"),
        ("[[contender]\n", "cannot be read as TOML"),
    ],
)
def test_a_bad_file_is_refused_in_one_line_that_names_what_to_fix(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(SettingsError) as refused:
        load_pair(write(tmp_path, text))
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_a_vote_is_one_of_four_and_keeps_only_known_reasons() -> None:
    record: dict = {"vote": None}
    cast(record, "both_bad", reasons=["More concise", "made up"], comment="  neither  ", user="ann")
    assert (record["vote"], record["reasons"], record["comment"], record["user"]) == (
        "both_bad",
        ["More concise"],
        "neither",
        "ann",
    )
    with pytest.raises(ValueError):
        cast(record, "c", reasons=[], comment="", user="ann")


def test_a_compared_question_stays_out_of_a_resumed_conversation() -> None:
    steps = [
        {"type": "user_message", "id": "q1", "output": "First?", "createdAt": "1"},
        {
            "type": "assistant_message",
            "id": "a1",
            "createdAt": "2",
            "metadata": {RECORD_KEY: {"kind": "answer", "answer": "One."}},
        },
        {"type": "user_message", "id": "q2", "output": "Compared?", "createdAt": "3"},
        {"type": "assistant_message", "id": "b2", "createdAt": "4", "metadata": {RECORD_KEY: {"kind": "battle"}}},
    ]
    assert [t.content for t in Conversation.from_steps(steps).turns] == ["First?", "One."]
