"""The reasoning parser: any stream, cut anywhere, parses as if it came in one piece (hypothesis)."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from backend.chat.reasoning import ThinkTagParser


def run(chunks: list[str], *, starts_in_reasoning: bool = False) -> tuple[str, str, bool]:
    parser = ThinkTagParser(starts_in_reasoning=starts_in_reasoning)
    segments = [seg for chunk in chunks for seg in parser.feed(chunk)] + parser.finish()
    reasoning = "".join(s.text for s in segments if s.kind == "reasoning")
    answer = "".join(s.text for s in segments if s.kind == "answer")
    return reasoning, answer, parser.in_reasoning  # still inside the reasoning when the stream ended


def splits(text: str, cuts: list[int]) -> list[str]:
    """The text cut at the given positions (sorted, clipped), as a stream of chunks."""
    points = sorted({min(max(c, 0), len(text)) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def every_two_and_three_way_split(text: str):
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            yield [text[:i], text[i:j], text[j:]]


INLINE = "<think>9.8 = 9.80 and 80 > 11</think>\n\nThe bigger number is 9.8."
OPENED_BY_TEMPLATE = "compare tenths: 8 > 1</think>9.8 is bigger."


def test_every_two_and_three_way_split_of_the_two_stream_shapes() -> None:
    """The fixed examples, exhaustively: every cut position pair (about 3,200 streams, in one test)."""
    for chunks in every_two_and_three_way_split(INLINE):
        assert run(chunks) == ("9.8 = 9.80 and 80 > 11", "The bigger number is 9.8.", False), chunks
    for chunks in every_two_and_three_way_split(OPENED_BY_TEMPLATE):
        assert run(chunks, starts_in_reasoning=True) == ("compare tenths: 8 > 1", "9.8 is bigger.", False), chunks


# Text made of what trips a tag parser: the tags' own characters, lookalikes, spaces and newlines.
TAG_PIECES = [tag[:n] for tag in ("<think>", "</think>") for n in range(1, len(tag) + 1)]
tricky = st.lists(st.sampled_from(list("<>/thinkTHINK 9.8\n") + TAG_PIECES), max_size=30).map("".join)
plain = st.text(alphabet=st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=40)
cuts = st.lists(st.integers(min_value=0, max_value=200), max_size=12)


@given(text=tricky, cut=cuts, inside=st.booleans())
def test_any_stream_parses_the_same_however_it_is_cut(text: str, cut: list[int], inside: bool) -> None:
    whole = run([text], starts_in_reasoning=inside)
    assert run(splits(text, cut), starts_in_reasoning=inside) == whole
    for i in range(len(text) + 1):  # and every single cut, which is where a held-back tag start shows
        assert run([text[:i], text[i:]], starts_in_reasoning=inside) == whole


@given(reasoning=plain, answer=plain, cut=cuts)
def test_tagged_reasoning_and_answer_come_apart_whatever_the_cuts(reasoning: str, answer: str, cut: list[int]) -> None:
    assume(answer.strip() == answer and reasoning.strip() == reasoning)
    assert run(splits(f"<think>{reasoning}</think>{answer}", cut)) == (reasoning, answer, False)


@given(reasoning=plain, answer=plain, cut=cuts)
def test_a_stream_opened_by_the_template_comes_apart_whatever_the_cuts(
    reasoning: str, answer: str, cut: list[int]
) -> None:
    assume(answer.strip() == answer and reasoning.strip() == reasoning)
    assert run(splits(f"{reasoning}</think>{answer}", cut), starts_in_reasoning=True) == (reasoning, answer, False)


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
