"""Fusing the dense and BM25 candidate lists (`search/fusion.py`): the arithmetic, ties, and absolute relevance."""

from __future__ import annotations

import pytest

from project_ledger.search.fusion import (
    blend,
    coverage,
    fuse,
    lent_coverage,
    positions,
    relevance,
    shifted,
    with_feedback,
    with_meaning,
    with_neighbours,
)
from project_ledger.search.index import Candidates, Hit
from project_ledger.search.sparse import SparseVec, whole_identifiers
from project_ledger.search.tuning import FusionParams

PARAMS = FusionParams(k=20, dense_weight=1.5, sparse_weight=1.0, candidates=50)


def test_fusion_sums_each_lists_weight_over_k_plus_rank() -> None:
    found = Candidates(dense=[Hit(1, 0.9), Hit(2, 0.8)], sparse=[Hit(2, 7.0), Hit(3, 5.0)])
    fused = fuse(found, PARAMS, limit=10)
    assert [hit.seq for hit in fused] == [2, 1, 3]  # found by both lists beats first in one
    scores = {hit.seq: hit.score for hit in fused}
    assert scores[1] == pytest.approx(1.5 / 20)
    assert scores[2] == pytest.approx(1.5 / 21 + 1.0 / 20)
    assert scores[3] == pytest.approx(1.0 / 21)


def test_the_dense_weight_decides_between_two_lists_first_places() -> None:
    found = Candidates(dense=[Hit(1, 0.9)], sparse=[Hit(2, 9.0)])
    assert [hit.seq for hit in fuse(found, PARAMS, 10)] == [1, 2]
    sparse_heavy = FusionParams(k=20, dense_weight=0.5, sparse_weight=1.0, candidates=50)
    assert [hit.seq for hit in fuse(found, sparse_heavy, 10)] == [2, 1]


def test_only_the_order_of_scores_counts_not_their_size() -> None:
    close = Candidates(dense=[Hit(1, 0.91), Hit(2, 0.90)], sparse=[])
    far = Candidates(dense=[Hit(1, 0.99), Hit(2, 0.01)], sparse=[])
    assert fuse(close, PARAMS, 10) == fuse(far, PARAMS, 10)


BLEND = FusionParams(k=2, dense_weight=1.0, sparse_weight=0.5, candidates=20, by_score=True)


def test_blending_adds_the_cosine_and_the_bm25_score_over_the_best_a_missing_one_scored_as_its_lists_last() -> None:
    found = Candidates(dense=[Hit(1, 0.8), Hit(2, 0.7), Hit(4, 0.6)], sparse=[Hit(3, 8.0), Hit(2, 4.0), Hit(4, 2.0)])
    blended = fuse(found, BLEND, 10)
    assert blended == blend(found, BLEND, 10)
    assert {hit.seq: hit.score for hit in blended} == pytest.approx(
        {1: 0.8 + 0.5 * 2 / 8, 2: 0.7 + 0.5 * 4 / 8, 3: 0.6 + 0.5 * 8 / 8, 4: 0.6 + 0.5 * 2 / 8}
    )
    assert [hit.seq for hit in blended] == [3, 2, 1, 4]
    # Sizes count, unlike in rank fusion: the same orders with the first dense hit far ahead put it first.
    far = Candidates(dense=[Hit(1, 0.99), Hit(2, 0.3), Hit(4, 0.2)], sparse=found.sparse)
    assert [hit.seq for hit in fuse(far, BLEND, 2)] == [1, 3]


def test_blending_scores_what_a_complete_bm25_list_lacks_as_zero_on_it() -> None:
    """One symbol alone holds the query's rare word: the BM25 list has it and nothing else, so the others share no word."""
    found = Candidates(dense=[Hit(2, 0.62), Hit(3, 0.60), Hit(4, 0.55), Hit(1, 0.40)], sparse=[Hit(1, 12.0)])
    assert [hit.seq for hit in fuse(found, BLEND, 10, asked=20)] == [1, 2, 3, 4]
    # a list cut at the count asked for says nothing of what it left out: the missing ones score as its last
    assert [hit.seq for hit in fuse(found, BLEND, 10, asked=1)] == [2, 3, 4, 1]


def test_blending_one_list_alone_keeps_its_order() -> None:
    dense_only = Candidates(dense=[Hit(1, 0.8), Hit(2, 0.7)], sparse=[])
    assert [hit.seq for hit in fuse(dense_only, BLEND, 10)] == [1, 2]
    sparse_only = Candidates(dense=[], sparse=[Hit(5, 3.0), Hit(6, 9.0)])
    assert [hit.seq for hit in fuse(sparse_only, BLEND, 10)] == [6, 5]
    assert fuse(Candidates(dense=[], sparse=[]), BLEND, 10) == []


def test_shifted_down_hits_lose_the_amount_and_fall_behind_only_those_it_brings_them_under() -> None:
    hits = [Hit(1, 0.9), Hit(2, 0.85), Hit(3, 0.7), Hit(4, 0.6)]
    assert shifted(hits, {1}, -0.1) == [Hit(2, 0.85), Hit(1, pytest.approx(0.8)), Hit(3, 0.7), Hit(4, 0.6)]
    assert shifted(hits, {1, 2}, 0.0) == shifted(hits, set(), -0.1) == hits


def test_equal_scores_rank_in_seq_order_whatever_order_the_engine_returned() -> None:
    assert positions([Hit(9, 0.5), Hit(4, 0.5), Hit(7, 0.8)]) == {7: 0, 4: 1, 9: 2}
    shuffled = Candidates(dense=[Hit(5, 0.5), Hit(3, 0.5)], sparse=[Hit(3, 1.0), Hit(5, 1.0)])
    ordered = Candidates(dense=[Hit(3, 0.5), Hit(5, 0.5)], sparse=[Hit(5, 1.0), Hit(3, 1.0)])
    assert fuse(shuffled, PARAMS, 10) == fuse(ordered, PARAMS, 10)
    assert [hit.seq for hit in fuse(shuffled, PARAMS, 10)] == [3, 5]


def test_fusion_returns_at_most_the_limit_best_first() -> None:
    found = Candidates(dense=[Hit(n, 1 - n / 10) for n in range(6)], sparse=[])
    assert [hit.seq for hit in fuse(found, PARAMS, 3)] == [0, 1, 2]
    assert fuse(Candidates(dense=[], sparse=[]), PARAMS, 3) == []


def test_relevance_is_the_cosine_or_the_term_coverage_whichever_is_higher() -> None:
    assert relevance(0.62, 0.25) == 0.62
    assert relevance(0.10, 0.75) == 0.75
    assert relevance(None, 0.5) == 0.5  # found by BM25 only
    assert relevance(None, 0.0) == 0.0


def test_coverage_is_the_share_of_query_terms_the_document_contains() -> None:
    query = SparseVec(indices=[1, 2, 3, 4], values=[1.0] * 4)
    assert coverage(query, SparseVec([2, 4, 9], [1.0] * 3)) == 0.5
    assert coverage(query, SparseVec([1, 2, 3, 4, 5], [1.0] * 5)) == 1.0
    assert coverage(query, SparseVec([], [])) == 0.0
    assert coverage(SparseVec([], []), SparseVec([1], [1.0])) == 0.0  # a query of stopwords only


def test_bm25_candidates_the_dense_list_missed_are_placed_in_it_by_their_own_cosine() -> None:
    found = Candidates(dense=[Hit(1, 0.9), Hit(2, 0.5)], sparse=[Hit(3, 8.0), Hit(2, 4.0), Hit(4, 2.0)])
    placed = with_meaning(found, {3: 0.7, 2: 0.1})  # 2's engine score stands; 4 has no vector and stays out
    assert placed.dense == [Hit(1, 0.9), Hit(3, 0.7), Hit(2, 0.5)]
    assert placed.sparse == found.sparse
    assert with_meaning(found, {}) is found


def test_identifiers_the_code_tokenizer_splits_also_get_their_whole_form() -> None:
    found = whole_identifiers("see OPS-94093, v5.31.272 and --dry-run in src/app/retry.py")
    assert found == "ops94093 v531272 dryrun srcappretrypy"
    assert whole_identifiers("retry_policy and RetryPolicy are kept whole by the tokenizer; plain words too") == ""


def test_each_bm25_hit_lends_a_share_of_its_score_to_the_turns_said_next_to_it() -> None:
    found = Candidates(dense=[Hit(9, 0.8)], sparse=[Hit(1, 4.0), Hit(3, 2.0), Hit(7, 0.5), Hit(8, 0.4)])
    smoothed = with_neighbours(found, {1: [2], 3: [2, 4]}, share=0.5)
    assert smoothed.dense == found.dense
    # Turn 2, between both hits, gets both shares; the list keeps its length, so the two weakest hits give way.
    assert smoothed.sparse == [Hit(1, 4.0), Hit(2, 3.0), Hit(3, 2.0), Hit(4, 1.0)]


def test_a_turn_borrows_up_to_its_best_neighbours_score_never_past_it() -> None:
    found = Candidates(dense=[], sparse=[Hit(2, 3.0), Hit(1, 1.0), Hit(3, 1.0), Hit(5, 0.2)])
    smoothed = with_neighbours(found, {2: [1, 3], 1: [2], 3: [2, 4]}, share=0.5)
    # Hit 2 (3.0) would get 3.0 + 1.0 from its weaker neighbours, but keeps 3.0; 1 and 3 rise to 2.5; 4 gets 0.5.
    assert smoothed.sparse == [Hit(2, 3.0), Hit(1, 2.5), Hit(3, 2.5), Hit(4, 0.5)]
    assert with_neighbours(found, {2: [1, 3], 1: [2], 3: [2, 4]}, share=0.0) is found
    assert with_neighbours(found, {}, share=0.5) is found


def test_a_turn_borrows_a_share_of_its_best_neighbouring_hits_coverage() -> None:
    lent = lent_coverage({1: 1.0, 3: 0.5}, {1: [2], 3: [2, 4]}, share=0.3)
    assert lent == pytest.approx({2: 0.3, 4: 0.15})


def test_feedback_adds_the_words_two_best_hits_share_weighted_by_their_share_of_each_hit() -> None:
    query = SparseVec([1, 2], [1.0, 1.0])
    top = [
        SparseVec([1, 10, 11, 12], [1.0, 1.0, 1.0, 2.0]),  # 12 holds half of this hit
        SparseVec([2, 10, 12], [2.0, 1.0, 1.0]),
        SparseVec([13], [5.0]),  # one hit's own word: never added
    ]
    widened = with_feedback(query, top, terms=5, weight=0.5)
    added = dict(zip(widened.indices, widened.values, strict=True))
    # The query keeps its terms and weights; 12 (0.4 + 0.25) is the heaviest shared word, 10 (0.2 + 0.25) in proportion.
    assert widened.indices[:2] == [1, 2] and widened.values[:2] == [1.0, 1.0]
    assert added.keys() == {1, 2, 10, 12}
    assert added[12] == pytest.approx(0.5)
    assert added[10] == pytest.approx(0.5 * 0.45 / 0.65)


def test_feedback_adds_at_most_the_asked_number_of_words_and_nothing_when_no_word_is_shared() -> None:
    query = SparseVec([1], [1.0])
    top = [SparseVec([5, 6, 7], [3.0, 2.0, 1.0]), SparseVec([5, 6, 7], [3.0, 2.0, 1.0])]
    assert with_feedback(query, top, terms=2, weight=0.2).indices == [1, 5, 6]
    alone = [SparseVec([5], [1.0]), SparseVec([6], [1.0])]
    assert with_feedback(query, alone, terms=5, weight=0.2) is query
    assert with_feedback(query, top, terms=5, weight=0.0) is query
    assert with_feedback(query, [], terms=5, weight=0.2) is query

