"""BM25 term vectors (`SparseEncoder`): the engine's tokenizers, built in-process."""

from __future__ import annotations

from project_ledger.search.sparse import SparseEncoder


def test_a_usual_length_applies_to_the_multilingual_terms_of_cjk_text_too() -> None:
    text = "重试策略 retry_policy 使用指数退避"
    default = SparseEncoder().document(text)
    short = SparseEncoder(avg_len=30).document(text)
    assert default.indices == short.indices
    assert all(a != b for a, b in zip(default.values, short.values, strict=True))
