"""Combining the dense and BM25 candidate lists into one ranking, and an absolute relevance for each result.

Fusion is done here rather than in the engine so that both backends rank identically, ties included, and
the per-list scores stay available to callers (the recall debugger shows them). The weights are in `tuning`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from project_ledger.search.index import Candidates, Hit
from project_ledger.search.sparse import SparseVec
from project_ledger.search.tuning import FusionParams


def _ordered(hits: list[Hit]) -> list[Hit]:
    """Equal scores in seq order: engines break ties differently, and fusion must not depend on it."""
    return sorted(hits, key=lambda hit: (-hit.score, hit.seq))


def positions(hits: list[Hit]) -> dict[int, int]:
    """Each point's rank in one candidate list, counted from 0, as `fuse` counts it."""
    return {hit.seq: rank for rank, hit in enumerate(_ordered(hits))}


def with_meaning(candidates: Candidates, cosines: Mapping[int, float]) -> Candidates:
    """The BM25 candidates the dense list missed, placed in it by their cosine similarity (from `cosines`).

    The dense list only holds the nearest few. A memory BM25 found on its words alone would otherwise have no
    dense rank at all, so a look-alike the dense list happened to hold outranks it on meaning it was never
    compared on. With its own cosine, every candidate is ranked on both words and meaning.
    """
    have = {hit.seq for hit in candidates.dense}
    extra = [Hit(hit.seq, cosines[hit.seq]) for hit in candidates.sparse if hit.seq not in have and hit.seq in cosines]
    return Candidates(dense=_ordered([*candidates.dense, *extra]), sparse=candidates.sparse) if extra else candidates


def with_neighbours(candidates: Candidates, neighbours: Mapping[int, Sequence[int]], share: float) -> Candidates:
    """The BM25 list with each hit lending `share` of its score to the turns said next to it (`neighbours`, by seq).

    A conversation spreads one fact over adjacent turns: the question's words are in one ("what did Ana adopt
    last month?"), the answer in the next ("a greyhound called Biscuit"). Scored alone, the answer turn lacks
    the words. Each turn's evidence becomes its own BM25 score plus `share` of its neighbours', but never more
    than the best neighbour's own score: a turn found through the words next to it ranks up to that turn, not
    past it, so a hit keeps its place over the turns around it. The list keeps its length: a turn that joins it
    displaces the weakest hit, so ranking what follows costs what it did. Read at query time from the turns
    that exist now, so a forgotten turn lends nothing.
    """
    if not share or not neighbours:
        return candidates
    own = {hit.seq: hit.score for hit in candidates.sparse}
    lent: dict[int, float] = {}
    best: dict[int, float] = {}
    for hit in candidates.sparse:
        for seq in neighbours.get(hit.seq, ()):
            lent[seq] = lent.get(seq, 0.0) + share * hit.score
            best[seq] = max(best.get(seq, 0.0), hit.score)
    scores = own | {seq: max(own.get(seq, 0.0), min(own.get(seq, 0.0) + lent[seq], best[seq])) for seq in lent}
    ranked = _ordered([Hit(seq, score) for seq, score in scores.items()])
    return Candidates(dense=candidates.dense, sparse=ranked[: len(candidates.sparse)])


def lent_coverage(lexical: Mapping[int, float], neighbours: Mapping[int, Sequence[int]], share: float) -> dict[int, float]:
    """The query-term coverage each turn borrows from the BM25 hits next to it: `share` of the best one's.

    A turn that joins the candidates on its neighbour's words (`with_neighbours`) would otherwise fall under the
    relevance floor for lacking the words it was found through.
    """
    lent: dict[int, float] = {}
    for seq, around in neighbours.items():
        for other in around:
            lent[other] = max(lent.get(other, 0.0), share * lexical.get(seq, 0.0))
    return lent


def with_feedback(query: SparseVec, top: Sequence[SparseVec], terms: int, weight: float) -> SparseVec:
    """The BM25 query widened with the words its best hits share (pseudo-relevance feedback), for a second search.

    A question names one side of what it asks about ("what activities does Melanie do"); the turns that answer it
    use other words ("pottery class", "camping"). The first search's best hits (`top`, their term vectors) hold
    some of those words. A term counts only if at least two of them hold it, so one hit's topic does not steer
    the search; each term's weight is its share of each hit's terms, summed, and the `terms` heaviest are added
    at up to `weight` (the heaviest at `weight`, the others in proportion) beside the query's own terms, which
    keep theirs. The engine weighs every term by its rarity, as it does the query's.
    """
    own = dict(zip(query.indices, query.values, strict=True))
    mass: dict[int, float] = {}
    held: dict[int, int] = {}
    for vector in top:
        total = sum(vector.values) or 1.0
        for index, value in zip(vector.indices, vector.values, strict=True):
            if index not in own:
                mass[index] = mass.get(index, 0.0) + value / total
                held[index] = held.get(index, 0) + 1
    shared = sorted(((m, index) for index, m in mass.items() if held[index] >= 2), key=lambda pair: (-pair[0], pair[1]))[:terms]
    if not shared or not weight:
        return query
    heaviest = shared[0][0]
    added = {index: weight * m / heaviest for m, index in shared}
    return SparseVec([*own, *added], [*own.values(), *added.values()])


def fuse(candidates: Candidates, fusion: FusionParams, limit: int, asked: int | None = None) -> list[Hit]:
    """Weighted reciprocal-rank fusion: sum over lists of weight / (k + rank), rank counted from 0; with
    `fusion.by_score`, the lists' scores are blended instead (`blend`; `asked` is how many each list was asked for)."""
    if fusion.by_score:
        return blend(candidates, fusion, limit, asked)
    scores: dict[int, float] = {}
    for hits, weight in ((candidates.dense, fusion.dense_weight), (candidates.sparse, fusion.sparse_weight)):
        for seq, rank in positions(hits).items():
            scores[seq] = scores.get(seq, 0.0) + weight / (fusion.k + rank)
    return _ordered([Hit(seq, score) for seq, score in scores.items()])[:limit]


def blend(candidates: Candidates, fusion: FusionParams, limit: int, asked: int | None = None) -> list[Hit]:
    """Score fusion: dense weight x cosine + sparse weight x BM25 score over the list's best, a candidate missing
    from one list scored as that list's last. A BM25 list shorter than the `asked` count is complete: what it lacks
    shares no word with the query and scores 0 on it (else a symbol that alone holds a rare query word could
    rank below every symbol holding none).

    Ranks alone throw away how far apart the candidates are: a symbol a little behind on meaning but far ahead on
    words loses to one that is second on both. A cosine is on one scale for every query; a BM25 score is not, so it
    is divided by the query's best one.
    """
    dense = {hit.seq: hit.score for hit in candidates.dense}
    sparse = {hit.seq: hit.score for hit in candidates.sparse}
    best = max(sparse.values(), default=0.0)
    floor_dense, floor_sparse = min(dense.values(), default=0.0), min(sparse.values(), default=0.0)
    if asked is not None and len(sparse) < asked:
        floor_sparse = 0.0
    scale = fusion.sparse_weight / best if best > 0 else 0.0
    return _ordered(
        [
            Hit(seq, fusion.dense_weight * dense.get(seq, floor_dense) + scale * sparse.get(seq, floor_sparse))
            for seq in dense.keys() | sparse.keys()
        ]
    )[:limit]


def shifted(hits: list[Hit], seqs: set[int], by: float) -> list[Hit]:
    """`hits` ranked again with the score of each one in `seqs` moved by `by` (up when positive)."""
    if not by or not seqs:
        return hits
    return _ordered([Hit(hit.seq, hit.score + by) if hit.seq in seqs else hit for hit in hits])


def coverage(query: SparseVec, document: SparseVec) -> float:
    """The share of the query's terms (stemmed, stopwords dropped) that the document contains.

    Unlike a BM25 score it does not depend on the size of the corpus, so one
    floor works for a ledger of ten memories and of a hundred thousand.
    """
    terms = set(query.indices)
    return len(terms & set(document.indices)) / len(terms) if terms else 0.0


def relevance(dense: float | None, lexical: float) -> float:
    """An absolute 0-1 relevance: the cosine similarity or the query-term coverage, whichever is higher.

    Fused ranks only order candidates; this says whether the best one is any good.
    """
    return max(dense or 0.0, lexical)
