"""Counting a result as the model is handed it (`text/tokens.py`), on plain strings."""

from __future__ import annotations

import json

import pytest

from project_ledger.text.tokens import TokenCounter, handed_count


@pytest.mark.parametrize("words", [3, 400, 1_500, 12_000])
def test_a_results_count_holds_once_written_into_its_own_tokens_field(words: int) -> None:
    counter = TokenCounter()
    text = " ".join(f"invoice{i % 97} retries" for i in range(words))
    with_zero = json.dumps({"text": text, "tokens": 0}, separators=(",", ":"))
    count = handed_count(counter, with_zero)
    assert counter.count(with_zero.replace('"tokens":0', f'"tokens":{count}')) == count


def test_a_whole_relevance_is_handed_as_a_javascript_client_writes_it() -> None:
    from project_ledger.models import RecallHit

    hits = [RecallHit(id="m1", text="t", kind="note", created_at="2026-12-03T18:35:12.5Z", relevance=r) for r in (1.0, 0.456)]
    assert [json.loads(hit.for_model_json()) for hit in hits] == [
        {"id": "m1", "text": "t", "kind": "note", "created_at": "2026-12-03T18:35Z", "relevance": 1},
        {"id": "m1", "text": "t", "kind": "note", "created_at": "2026-12-03T18:35Z", "relevance": 0.46},
    ]
    assert '"relevance":1}' in hits[0].for_model_json()  # Claude Code re-serialises 1.0 as 1: `.0` is never handed
