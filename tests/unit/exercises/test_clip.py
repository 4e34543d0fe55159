"""A value quoted in a check's sentence is cut at a word's end, never mid-word, and says how long it was."""

from __future__ import annotations

from server.exercises.checks import SHOWN_CHARS, clip


def test_a_short_value_is_quoted_whole() -> None:
    assert clip("EMQSTALE complete token mismatch") == "EMQSTALE complete token mismatch"


def test_a_long_sentence_is_cut_after_a_whole_word_and_says_its_length() -> None:
    text = "the parent was released although JOBchild3 was still outstanding " * 4
    cut = clip(text)
    shown = cut.split("…")[0]
    assert len(shown) <= SHOWN_CHARS and text.startswith(shown)
    assert text[len(shown)] == " "  # the next character starts a new word
    assert cut.endswith(f"({len(text):,} characters)")


def test_a_value_with_no_space_is_cut_at_the_limit() -> None:
    assert clip("x" * 500).startswith("x" * SHOWN_CHARS + "…")
