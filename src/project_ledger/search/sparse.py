"""BM25 term vectors, built in-process so that both backends index and query the same tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

from project_ledger.text.text_signals import code_tokens

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# An inner separator, which the code tokenizer splits a name at: OPS-94093, v5.31.272, --dry-run, a/b.py.
_INNER_SEPARATOR = re.compile(r"\w[.\-/:#]+\w")
_NOT_WORD = re.compile(r"\W|_")


def whole_identifiers(text: str) -> str:
    """The identifiers of `text` that the code tokenizer would only split (`OPS-94093`, `v5.31.272`,
    `--dry-run`, `billing.retry.v3`), each joined into one word (`ops94093`), space-separated.

    Indexed beside their parts, they give an exact name a term of its own: its rare whole form outweighs
    the common parts (`ops`, `dry`, `run`) that look-alikes share. A snake_case name gets the same joined
    term from the tokenizer itself, so `retry-policy` and `retry_policy` match each other.
    """
    joined = (token for token in code_tokens(text) if _INNER_SEPARATOR.search(token))
    return " ".join(dict.fromkeys(_NOT_WORD.sub("", token.lower()) for token in joined))


@dataclass(frozen=True)
class SparseVec:
    indices: list[int]
    values: list[float]


class SparseEncoder:
    """BM25 term vectors from Qdrant's own tokenizer, built in-process for both backends.

    The `Code` tokenizer keeps an identifier whole and also splits it
    (`RetryPolicy` -> retrypolicy, retry, policy), so exact names and their
    words both match; names it would only split get their whole form added
    (`whole_identifiers`). Text with CJK characters also gets the multilingual
    tokenizer's segmentation, which the code tokenizer lacks.
    """

    def __init__(self, avg_len: float | None = None) -> None:
        """`avg_len`: the document length, in tokens, that BM25's length normalisation takes as usual (the engine's
        default, 256, when None), for both tokenizers' terms; shorter documents count each term more."""
        from qdrant_edge import Bm25, Bm25Config, TokenizerType

        self._code = Bm25(Bm25Config(tokenizer=TokenizerType.Code, avg_len=avg_len))
        self._multilingual = Bm25(Bm25Config(tokenizer=TokenizerType.Multilingual, avg_len=avg_len))

    def _encode(self, text: str, method: str) -> SparseVec:
        if whole := whole_identifiers(text):
            text = f"{text}\n{whole}"
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
