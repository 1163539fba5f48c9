"""A plain Okapi BM25, the keyword search that the issue and the LoCoMo data README measure the ledger against.

k1 1.2, b 0.75, lower case, English stop words removed, Snowball English stemming, one document per turn: the data
README's reference (R@5 0.585, R@10 0.659 on the dev split). Tokens, stop words and stems come from Qdrant's own
`Bm25` with the `Word` tokenizer and `language="english"`, so nothing here is a second tokenizer to keep in step;
document frequencies, `avg_len` and the scores are computed here over the searched documents alone, as a textbook
BM25 does. The ledger's own BM25 leg differs on purpose (the `Code` tokenizer keeps identifiers whole, no stemming,
`avg_len` fitted to its memories) and is the "BM25 alone" row beside this one. A query term counts once however
often the question repeats it (Qdrant's query vector holds each term once).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from qdrant_edge import Bm25, Bm25Config, TokenizerType

K1 = 1.2
B = 0.75


def _terms(model: Bm25, text: str) -> dict[int, float]:
    vector = model.embed_document(text)
    return dict(zip(vector.indices, vector.values, strict=True))


class PlainBm25:
    """BM25 over a fixed list of documents; `search` returns their positions, best first."""

    def __init__(self, documents: Sequence[str]) -> None:
        # With b=0 the engine's weight of a term is tf·(k1+1)/(tf+k1), whatever the length, so tf can be read back.
        counting = Bm25(Bm25Config(tokenizer=TokenizerType.Word, language="english", k=K1, b=0.0))
        self._query_model = counting
        self._tf = [
            {term: round(weight * K1 / (K1 + 1 - weight)) for term, weight in _terms(counting, text).items()} for text in documents
        ]
        lengths = [sum(tf.values()) for tf in self._tf]
        self._avg_len = sum(lengths) / len(lengths) if any(lengths) else 1.0
        self._lengths = lengths
        frequency = Counter(term for tf in self._tf for term in tf)
        n = len(documents)
        self._idf = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}

    def search(self, query: str, depth: int) -> list[int]:
        terms = self._idf.keys() & set(self._query_model.embed_query(query).indices)
        scores: list[tuple[float, int]] = []
        for position, (tf, length) in enumerate(zip(self._tf, self._lengths, strict=True)):
            norm = K1 * (1 - B + B * length / self._avg_len)
            score = sum(self._idf[t] * tf[t] * (K1 + 1) / (tf[t] + norm) for t in terms if t in tf)
            if score > 0:
                scores.append((score, position))
        scores.sort(key=lambda pair: (-pair[0], pair[1]))
        return [position for _, position in scores[:depth]]
