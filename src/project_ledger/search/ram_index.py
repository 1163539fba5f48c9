"""Points held in this process's memory, searched as the embedded shard searches them.

The embedded index keeps its points here while the disk has no room for the
shard's writes (see `edge_index`): searches then stay complete and current, and
the shard is written again once there is room. Scores follow the engine's:
cosine over normalised dense vectors, and BM25 as the sum over the query's terms
of query weight x document weight x IDF, with the engine's IDF,
ln(1 + (N - n + 0.5) / (n + 0.5)) over the N points held, n of them holding the
term. (The engine also counts points deleted since its last optimisation in N
and n; only those counts differ.)

Each point's vectors are kept as arrays (about 2 KB for a memory of 40 words);
a search stacks them into one matrix and one list of every term, made again
after a change, so that it costs a few array operations over all the points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from project_ledger.search.index import Candidates, Hit, Indexable, Match
from project_ledger.search.sparse import SparseVec


@dataclass(frozen=True)
class HeldPoint:
    """One point as the shard stores it; `Indexable`, so it can be written back to a shard."""

    seq: int
    terms: np.ndarray  # uint32 BM25 term ids
    weights: np.ndarray  # float32, one per term
    dense: np.ndarray | None  # float32, normalised
    fields: dict[str, Any]

    @classmethod
    def of(cls, seq: int, sparse: SparseVec, vector: Sequence[float] | None, payload: dict[str, Any]) -> HeldPoint:
        dense = None
        if vector is not None:
            dense = np.asarray(vector, dtype=np.float32)
            dense /= np.linalg.norm(dense) or 1.0
        terms, weights = np.asarray(sparse.indices, dtype=np.uint32), np.asarray(sparse.values, dtype=np.float32)
        return cls(seq, terms, weights, dense, dict(payload))

    @property
    def sparse(self) -> SparseVec:
        return SparseVec(self.terms.tolist(), self.weights.tolist())

    @property
    def vector(self) -> list[float] | None:
        return self.dense.tolist() if self.dense is not None else None

    def payload(self) -> dict[str, Any]:
        return self.fields


@dataclass(frozen=True)
class _Stacked:
    """Every point's vectors side by side, for one search."""

    seqs: np.ndarray  # the dense matrix's rows
    matrix: np.ndarray
    term_seqs: np.ndarray  # for each stored term: its point's seq
    terms: np.ndarray
    weights: np.ndarray


class RamIndex:
    """Upserts, deletes and searches points in memory; no watermark, epoch or files (the embedded index keeps those)."""

    def __init__(self) -> None:
        self._points: dict[int, HeldPoint] = {}
        self._stacked: _Stacked | None = None

    def upsert(self, points: Sequence[Indexable]) -> None:
        for point in points:
            held = point if isinstance(point, HeldPoint) else HeldPoint.of(point.seq, point.sparse, point.vector, point.payload())
            self._points[point.seq] = held
        self._stacked = None

    def delete(self, seqs: Sequence[int]) -> None:
        for seq in seqs:
            self._points.pop(seq, None)
        self._stacked = None

    def clear(self) -> None:
        self._points.clear()
        self._stacked = None

    def count(self) -> int:
        return len(self._points)

    def holds(self, seq: int) -> bool:
        return seq in self._points

    def points(self, seqs: Sequence[int] | None = None) -> Iterator[HeldPoint]:
        """The points held (those of `seqs` that are held), in no particular order."""
        if seqs is None:
            yield from self._points.values()
        else:
            yield from (self._points[seq] for seq in seqs if seq in self._points)

    def _stack(self) -> _Stacked:
        if self._stacked is None:
            with_dense = [(point.seq, dense) for point in self._points.values() if (dense := point.dense) is not None]
            held = list(self._points.values())
            self._stacked = _Stacked(
                seqs=np.array([seq for seq, _ in with_dense], dtype=np.int64),
                matrix=np.stack([dense for _, dense in with_dense]) if with_dense else np.zeros((0, 0), np.float32),
                term_seqs=np.repeat(np.array([p.seq for p in held], dtype=np.int64), [len(p.terms) for p in held]),
                terms=np.concatenate([p.terms for p in held]) if held else np.zeros(0, np.uint32),
                weights=np.concatenate([p.weights for p in held]) if held else np.zeros(0, np.float32),
            )
        return self._stacked

    def candidates(self, dense: list[float] | None, sparse: SparseVec, where: Sequence[Match], limit: int) -> Candidates:
        def admitted(seq: int) -> bool:
            fields = self._points[seq].fields
            return all(match.field in fields and match.holds(fields[match.field]) for match in where)

        stacked = self._stack()
        return Candidates(
            dense=self._nearest(stacked, dense, admitted, limit) if dense is not None else [],
            sparse=self._by_terms(stacked, sparse, admitted, limit),
        )

    def _by_terms(self, stacked: _Stacked, query: SparseVec, admitted: Callable[[int], bool], limit: int) -> list[Hit]:
        held = len(self._points)
        scores: dict[int, float] = {}
        for term, query_weight in zip(query.indices, query.values, strict=True):
            found = np.flatnonzero(stacked.terms == term)
            if not len(found):
                continue
            idf = math.log(1 + (held - len(found) + 0.5) / (len(found) + 0.5))
            for seq, weight in zip(stacked.term_seqs[found].tolist(), stacked.weights[found].tolist(), strict=True):
                scores[seq] = scores.get(seq, 0.0) + query_weight * weight * idf
        ranked = sorted((hit for hit in scores.items() if admitted(hit[0])), key=lambda hit: hit[1], reverse=True)
        return [Hit(seq, score) for seq, score in ranked[:limit]]

    def _nearest(self, stacked: _Stacked, dense: list[float], admitted: Callable[[int], bool], limit: int) -> list[Hit]:
        if not len(stacked.seqs):
            return []
        query = np.asarray(dense, dtype=np.float32)
        scores = stacked.matrix @ (query / (np.linalg.norm(query) or 1.0))
        hits: list[Hit] = []
        for row in np.argsort(-scores, kind="stable"):
            seq = int(stacked.seqs[row])
            if admitted(seq):
                hits.append(Hit(seq, float(scores[row])))
                if len(hits) == limit:
                    break
        return hits
