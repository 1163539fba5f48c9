"""A question's first-person framing is no search term (`text/query_framing.py`), on plain strings."""

from __future__ import annotations

import pytest

from project_ledger.text.query_framing import topic
from project_ledger.text.text_signals import searchable_words


@pytest.mark.parametrize(
    ("query", "left"),
    [
        ("what did we settle on for retries when the gateway times out?", ["retries", "gateway", "times"]),
        ("What did we decide about representing money in billing?", ["representing", "money", "billing"]),
        ("Remind me, what is our retry policy?", ["what", "retry", "policy"]),
        ("Yesterday we decided to move hosting again. Where to?", ["yesterday", "move", "hosting"]),
        ("Why did we go with that mail vendor?", ["mail", "vendor"]),
        ("Which release version have we just agreed on?", ["which", "release", "version"]),
    ],
)
def test_first_person_framing_goes_and_the_topic_stays(query: str, left: list[str]) -> None:
    assert [word for word in searchable_words(topic(query)) if word not in ("what", "which", "why")] == [
        word for word in left if word not in ("what", "which", "why")
    ]


def test_what_someone_else_decided_is_the_topic_and_a_bare_framing_is_kept_whole() -> None:
    assert topic("What did Caroline decide to do after the move?") == "What did Caroline decide to do after the move?"
    assert topic("What did we decide?") == "What did we decide?"  # nothing else to search for
    assert topic("what does 'settled' mean for us?") == "what does 'settled' mean for us?"
    assert topic("Did we opt out of telemetry in the landing page?") == "Did we opt out of telemetry in the landing page?"
