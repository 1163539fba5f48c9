"""Which query tokens name one thing exactly, and whether a text holds one (`text/text_signals.py`)."""

from __future__ import annotations

import pytest

from project_ledger.text.text_signals import exact_terms, mentions, searchable_words


def test_identifier_shaped_tokens_are_exact_terms_and_plain_words_are_not() -> None:
    query = "Is OPS-94093 about v5.31.272, ERR_QUOTA_4127, fetchUserQuota, billing.retry.v3, --dry-run or src/a/b.py? retry 2x"
    assert exact_terms(query) == [
        "ops-94093", "v5.31.272", "err_quota_4127", "fetchuserquota", "billing.retry.v3", "--dry-run", "src/a/b.py",
    ]  # fmt: skip
    assert exact_terms("how do we deploy to production") == []


@pytest.mark.parametrize(
    ("text", "term", "held"),
    [
        ("Raised in OPS-94093.", "ops-94093", True),  # the full stop ends the sentence, not the name
        ("Raised in ops-94093 too", "ops-94093", True),
        ("Raised in OPS-940931.", "ops-94093", False),
        ("pinned to v5.31.272", "v5.31.27", False),
        ("pinned to v5.31.272.1", "v5.31.272", False),
        ("run with --dry-run-all", "--dry-run", False),
        ("(see a3f9c2e)", "a3f9c2e", True),
    ],
)
def test_a_text_mentions_a_term_only_as_a_whole_token(text: str, term: str, held: bool) -> None:
    assert mentions(text, term) is held


def test_filler_and_punctuation_leave_nothing_to_search_for_but_short_words_and_any_script_do() -> None:
    assert searchable_words("what is the ?!") == []
    assert searchable_words("v2 Go 会议") == ["v2", "go", "会议"]
