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
