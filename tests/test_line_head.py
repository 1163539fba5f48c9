"""The name a line opens with (`text/line_head.py`): a chat log's speaker or a heading, and whether a query names it."""

from __future__ import annotations

import pytest

from project_ledger.text.line_head import head_name, names_head
from project_ledger.text.text_signals import searchable_words


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("[1:56 pm on 8 May, 2023] Caroline: I went to a LGBTQ support group yesterday.", "caroline"),
        ("Melanie: That's great, Caroline!", "melanie"),
        ("Mary Ann Evans: the novel is done.", "mary"),
        ("Settings: pydantic-settings class in src/brightmeter/config.py", "settings"),
        ("RetryPolicy: max_attempts=8, base_delay=2s", "retrypolicy"),
        ("We moved billing to Postgres: the schema lives in billing/.", None),  # a colon, but not at the head
        ("caroline: lower-case is not a name", None),
        ("Caroline:no space after the colon", None),
        ("[tool] Bash: pytest -q", None),  # a bracket, then a lower-case word
        ("https://example.com: a link", None),
        ("", None),
    ],
)
def test_the_name_a_line_opens_with(text: str, name: str | None) -> None:
    assert head_name(text) == name


def test_a_query_names_the_head_by_its_first_word_in_any_case() -> None:
    asked = frozenset(searchable_words("What did caroline research in May?"))
    assert names_head(asked, "[8 May, 2023] Caroline: Researching adoption agencies.")
    assert not names_head(asked, "[8 May, 2023] Melanie: Caroline, that's wonderful!")  # says the name, is not hers
    assert not names_head(asked, "Researching adoption agencies, said Caroline.")
    assert not names_head(frozenset(), "Caroline: hi")


def test_a_long_head_is_no_name_and_is_read_in_bounded_time() -> None:
    # The pattern is anchored and every repetition bounded: a megabyte without a colon is rejected at its head.
    assert head_name("A" * 1_000_000) is None
    assert head_name("[" + "x" * 100 + "] Caroline: too long a time") is None
    assert head_name("Caroline " * 10 + ": too many words") is None
