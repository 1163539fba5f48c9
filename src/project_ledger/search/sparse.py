"""BM25 term vectors, built in-process so that both backends index and query the same tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@dataclass(frozen=True)
class SparseVec:
    indices: list[int]
    values: list[float]


class SparseEncoder:
    """BM25 term vectors from Qdrant's own tokenizer, built in-process for both backends.

    The `Code` tokenizer keeps an identifier whole and also splits it
    (`RetryPolicy` -> retrypolicy, retry, policy), so exact names and their
    words both match. Text with CJK characters also gets the multilingual
    tokenizer's segmentation, which the code tokenizer lacks.
    """

    def __init__(self) -> None:
        from qdrant_edge import Bm25, Bm25Config, TokenizerType

        self._code = Bm25(Bm25Config(tokenizer=TokenizerType.Code))
        self._multilingual = Bm25(Bm25Config(tokenizer=TokenizerType.Multilingual))

    def _encode(self, text: str, method: str) -> SparseVec:
        vector = getattr(self._code, method)(text)
        indices, values = list(vector.indices), list(vector.values)
        if _CJK.search(text):
            seen = set(indices)
            extra = getattr(self._multilingual, method)(text)
            for index, value in zip(extra.indices, extra.values, strict=True):
                if index not in seen:
                    indices.append(index)
                    values.append(value)
        return SparseVec(indices, values)

    def document(self, text: str) -> SparseVec:
        return self._encode(text, "embed_document")

    def query(self, text: str) -> SparseVec:
        return self._encode(text, "embed_query")
