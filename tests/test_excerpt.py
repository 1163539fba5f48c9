"""The part of a memory that bears on a question, when all of it does not fit (`text/excerpt.py`)."""

from __future__ import annotations

from project_ledger.text.excerpt import excerpt


def words(text: str) -> int:
    return len(text.split())


GIST = (
    "Gist of session 57d9 (10 turns, 2026-12-01; extractive). [ids] are sources: recall(ids=...) for exact words.\n"
    "Decisions:\n"
    "- Payment gateway client retries back off 0.5 s doubling, at most 4 tries [m1, m2]\n"
    "Constraints and conditions:\n"
    "- Card numbers are never logged [m3]"
)


def test_a_text_that_fits_comes_back_whole() -> None:
    assert excerpt(GIST, ["retries"], words, 1000) == GIST


def test_the_lines_holding_the_question_words_are_kept_in_order_never_the_header() -> None:
    shown = excerpt(GIST, ["payment", "retries", "card"], words, 30)
    assert shown == (
        "… - Payment gateway client retries back off 0.5 s doubling, at most 4 tries [m1, m2] … "
        "- Card numbers are never logged [m3]"
    )
    assert "Gist of session" not in excerpt(GIST, ["retries"], words, 20)


def test_when_not_even_the_best_line_fits_its_first_words_do() -> None:
    shown = excerpt(GIST, ["retries"], words, 6)
    assert shown == "- Payment gateway client retries …" and words(shown) <= 6
    assert excerpt(GIST, ["retries"], words, 1) == ""


def test_without_a_matching_line_the_text_opens_the_excerpt() -> None:
    assert excerpt("First line here.\nSecond line here.\nThird.", ["unrelated"], words, 4).startswith("First line here.")


def test_a_long_line_is_cut_into_sentences() -> None:
    text = "Background first. " * 20 + "The rate limit is 100 requests per second per key. " + "Trailing detail. " * 20
    assert excerpt(text, ["rate", "limit"], words, 15) == "… The rate limit is 100 requests per second per key. …"
