"""The reasoning parser, over every split point of every stream shape it must handle."""

from __future__ import annotations

import pytest

from backend.chat.reasoning import ThinkTagParser


def run(chunks: list[str], *, starts_in_reasoning: bool = False) -> tuple[str, str, bool]:
    parser = ThinkTagParser(starts_in_reasoning=starts_in_reasoning)
    segments = [seg for chunk in chunks for seg in parser.feed(chunk)] + parser.finish()
    reasoning = "".join(s.text for s in segments if s.kind == "reasoning")
    answer = "".join(s.text for s in segments if s.kind == "answer")
    return reasoning, answer, parser.reasoning_unclosed


def every_split(text: str):
    """The text cut into two and into three pieces at every pair of positions."""
    yield [text]
    for i in range(len(text) + 1):
        yield [text[:i], text[i:]]
        for j in range(i, len(text) + 1):
            yield [text[:i], text[i:j], text[j:]]


INLINE = "<think>9.8 = 9.80 and 80 > 11</think>\n\nThe bigger number is 9.8."


@pytest.mark.parametrize("chunks", list(every_split(INLINE)))
def test_inline_tags_split_anywhere(chunks: list[str]) -> None:
    assert run(chunks) == ("9.8 = 9.80 and 80 > 11", "The bigger number is 9.8.", False)


OPENED_BY_TEMPLATE = "compare tenths: 8 > 1</think>9.8 is bigger."


@pytest.mark.parametrize("chunks", list(every_split(OPENED_BY_TEMPLATE)))
def test_stream_that_starts_inside_the_reasoning(chunks: list[str]) -> None:
    assert run(chunks, starts_in_reasoning=True) == ("compare tenths: 8 > 1", "9.8 is bigger.", False)


def test_one_character_at_a_time() -> None:
    assert run(list(INLINE)) == ("9.8 = 9.80 and 80 > 11", "The bigger number is 9.8.", False)


def test_no_tags_at_all_is_all_answer() -> None:
    assert run(["The capital", " of France is Paris."]) == ("", "The capital of France is Paris.", False)


def test_text_that_only_looks_like_a_tag_start_is_kept() -> None:
    assert run(["a <thi", "ng> and x < y <"]) == ("", "a <thing> and x < y <", False)


def test_reasoning_cut_off_by_the_token_limit() -> None:
    reasoning, answer, unclosed = run(["<think>first, 9.11 has", " more digits so</th"])
    assert (reasoning, answer, unclosed) == ("first, 9.11 has more digits so</th", "", True)


def test_a_think_tag_after_the_answer_began_is_text() -> None:
    assert run(["Use the <think> tag like this."]) == ("", "Use the <think> tag like this.", False)


def test_empty_reasoning_block() -> None:
    assert run(["<think></think>", "Paris."]) == ("", "Paris.", False)
