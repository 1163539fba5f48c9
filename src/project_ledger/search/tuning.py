"""Every ranking parameter in one place: recall's, code search's and the repository map's, with where each value
came from. Values only; the arithmetic that uses them is in `search/fusion.py`, `memory/ranking.py` and
`code/repo_map.py`.

Two of recall's are also settings (`LEDGER_RECENCY_HALF_LIFE_DAYS`, `LEDGER_MIN_RELEVANCE`): `config.Settings`
takes its defaults from here, and the factory passes what the user set into `RankingParams`.

This module imports nothing of the project, so `search/`, `code/` and `memory/` can all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, kw_only=True)
class FusionParams:
    """How dense and BM25 candidates are combined: weighted reciprocal-rank fusion (`fusion.fuse`), or their
    scores blended with the same weights (`by_score`, `fusion.blend`)."""

    k: int  # added to each rank: a small k lets the top few of each list dominate (unused `by_score`)
    dense_weight: float
    sparse_weight: float = 1.0  # the weight the dense one is relative to
    candidates: int  # fetched from each list
    neighbour_share: float = 0.0  # of a BM25 hit's score lent to the turns said next to it (`fusion.with_neighbours`)
    feedback_hits: int = 0  # BM25 hits whose shared words widen a second BM25 search that replaces the first (0: none)
    feedback_terms: int = 5  # words added to that search at most (`fusion.with_feedback`)
    feedback_weight: float = 0.2  # of a query term's weight, for the heaviest added word
    by_score: bool = False  # cosine and BM25 score over the best blended with the weights, not ranks (`fusion.blend`)


# Scores blended: cosine + 0.3 x BM25 score over the query's best (`fusion.blend`). Chosen on rich among 0.1-0.5
# (offline copy of the ranking: 0.3 best on all its questions and on one half, 0.4 by 0.001 on the other). Docstring-to-symbol MRR@10, ranked only,
# against the reciprocal-rank fusion before (k=2, dense list at 1.5): rich 0.569 -> 0.579, and on the trees not
# chosen on click 0.439 -> 0.445, zod 0.311 -> 0.321, httpx 0.410 -> 0.428 (README, "Code search").
CODE_FUSION = FusionParams(k=2, dense_weight=1.0, sparse_weight=0.3, candidates=20, by_score=True)
# Taken off the blended score of a symbol in a test file (`source_files.is_test_file`) unless the query mentions tests
# (`naming.asks_about_tests`): tests repeat the words of what they test, and ranked first for 52 of click's 247 held-out
# docstrings and 43 of httpx's 216. Set by hand: the benchmark asks nothing a test answers, so it gains with any amount
# (ranked only, 0.05 / 0.1 / 0.2 / 1: click 0.450 -> 0.471 / 0.483 / 0.496 / 0.500, httpx 0.427 -> 0.455 / 0.465 /
# 0.476 / 0.478; rich has no tests indexed) and cannot say what a larger one costs a search for a test that does not
# say "test". 0.1 of a cosine lets a test that matches far better than the code still show.
CODE_TEST_PENALTY = 0.1
# BM25's usual document length for code symbols, in tokens (the engine's default, 256, suits memories). A symbol's
# text holds about 20 distinct terms; chosen on rich among 20, 30, 40 and 80 (BM25 list alone 0.463 -> 0.500 at 30, offline),
# and up on every other tree measured (README, "Code search"). Changing it needs `code.symbol_text.TEXT_VERSION` bumped.
CODE_BM25_AVG_LEN = 30.0

# Chosen with `benchmarks/tune_fusion.py` on the project's conversation and LoCoMo dev at once, BM25-only candidates
# ranked on their cosine too (`fusion.with_meaning`), among the settings that cost neither corpus more than 0.01 of R@5,
# R@10 or MRR against the fusion before neighbour sharing (k=10, equal weights): the BM25 list is that of the query
# widened with the words its three best hits share (`fusion.with_feedback`), and each of its hits lends 0.3 of its
# score to the turns next to it (`fusion.with_neighbours`). It holds every figure of the project's corpus. The
# script's top pick, the same with the dense list at 0.75, lost that corpus's R@10 under the relevance floor (0.858);
# sharing 0.5 reached LoCoMo R@10 0.762 but cost the project's corpus 0.014 of MRR (README).
MEMORY_FUSION = FusionParams(k=10, dense_weight=1.0, candidates=50, neighbour_share=0.3, feedback_hits=3)


@dataclass(frozen=True, kw_only=True)
class RankingParams:
    """How recalled memories are ordered once fused (`memory/ranking.py`).

    Fusion is tuned on two corpora (above). Recency, kind weights, the outdated factor and the floor were tuned
    on `benchmarks/retrieval.py` (README, "Retrieval quality") before turns were captured into typed memories;
    its "as shipped" row scores them on today's ledger. The access weight, session boost, outdated-turn similarity and
    wording, and the gist (`summary`) weight were set by hand: the benchmark cannot exercise them.
    """

    fusion: FusionParams = MEMORY_FUSION
    half_life_days: float = 7.0  # recency: an item this old keeps half of the decaying share (LEDGER_RECENCY_HALF_LIFE_DAYS)
    recency_share: float = 0.3  # the part of the score that decays; the rest never does
    no_decay_kinds: frozenset[str] = frozenset({"decision", "definition"})  # they hold until superseded, however old
    access_weight: float = 0.03  # per e-fold of times used: fetched by id, pinned, or stored again (never a search hit)
    session_boost: float = 0.1
    superseded_factor: float = 0.7  # superseded memories (when asked for) and outdated turns rank below current ones
    outdated_turn_similarity: float = 0.6  # a turn this close to a decision recorded after it shares its fate
    outdated_turn_wording: float = 0.7  # ... as does one with this share of its content words (4 or more) in it
    kind_weights: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"decision": 1.1, "definition": 1.1, "turn": 0.95, "summary": 0.7})
    )
    floor: float = 0.24  # relevance (cosine or query-term coverage) a result needs (LEDGER_MIN_RELEVANCE)
    # For a question that asks when (`text/time_words.py`), a memory that says when moves up the dense list as if this
    # much closer in meaning (order only, `fusion.with_time`), and its score is multiplied by 1 + time_boost. Chosen
    # with `benchmarks/tune_fusion.py` on both corpora; `benchmarks/tune_time.py`, leaving one LoCoMo conversation out
    # at a time, finds nothing better by more than noise (README, "Public conversations (LoCoMo)").
    time_lift: float = 0.05
    time_boost: float = 0.3
    exact_most: int = 3  # an identifier the query names that at most this many candidates hold puts them first (set by hand)
    # What a turn does in the conversation (`text/dialogue_act.py`): only a statement answers. A question asks for
    # what another turn states, an acknowledgement says nothing, a tool call's log line says what was run, not what
    # was decided. Plumbing (the client's machinery, the ledger's own calls) is never returned.
    act_weights: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"question": 0.6, "acknowledgement": 0.3, "log": 0.5})
    )
    restated_share: float = 0.6  # of a turn's content words in a decision, definition or constraint: it restates it


@dataclass(frozen=True, kw_only=True)
class RepoMapParams:
    """How the repository map weighs a use of a name and ranks files (`code/repo_map.py`).

    The weights are Aider's (`aider/repomap.py`, `get_ranked_tags`); the PageRank damping is the textbook 0.85.
    The focus bonuses were set by hand, so that what the caller asked about comes first.
    """

    focus_name: float = 10.0  # a name the caller focused on
    specific_name: float = 10.0  # a long snake_case or camelCase name ...
    specific_min_chars: int = 8  # ... of at least this many characters
    private_name: float = 0.1  # a `_private` name
    common_name: float = 0.1  # a name defined in more than `common_files` files
    common_files: int = 5
    damping: float = 0.85
    iterations: int = 40  # of PageRank's power iteration
    focus_name_bonus: float = 1.0  # added to the score of a definition the caller named
    focus_file_bonus: float = 1.0  # ... of a top-level definition in a focused file
    focus_nested_bonus: float = 0.5  # ... of a nested one (a method), so the file's outline reads top-level first


REPO_MAP = RepoMapParams()
