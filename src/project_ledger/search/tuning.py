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
    by_score: bool = False  # cosine and BM25 score over the best blended with the weights, not ranks (`fusion.blend`)


# Scores blended, not ranks fused: a symbol's cosine and BM25 score both say how well it matches. BM25's weight and
# the candidates per list as `benchmarks/code_search.py --tune` chose them for the query model, 2-fold cross-validated
# (0.2 and 50 for the code model alone, 0.3 and 20 with the bundled model; figures in docs/benchmarks.md, "Code search").
CODE_FUSION = FusionParams(k=2, dense_weight=1.0, sparse_weight=0.1, candidates=50, by_score=True)
# Taken off a symbol in a test file unless the query mentions tests (`naming.asks_about_tests`): tests repeat the words
# of what they test. Set by hand, small enough that a test matching far better than the code still shows.
CODE_TEST_PENALTY = 0.1
# BM25's usual document length for a code symbol's text (about 20 distinct terms; the engine's 256 suits memories).
# Changing it needs `code.symbol_text.TEXT_VERSION` bumped.
CODE_BM25_AVG_LEN = 30.0

@dataclass(frozen=True, kw_only=True)
class CandidateParams:
    """Which memories a query's ranking looks at: the best of each list, the BM25 one widened by feedback, and the
    turns said next to BM25 hits (`search/fusion.py`)."""

    candidates: int = 50  # fetched from each list
    neighbour_share: float = 0.3  # of a BM25 hit's score lent to the turns said next to it (`fusion.with_neighbours`)
    feedback_hits: int = 3  # BM25 hits whose shared words widen a second BM25 search that replaces the first (0: none)
    feedback_terms: int = 5  # words added to that search at most (`fusion.with_feedback`)
    feedback_weight: float = 0.2  # of a query term's weight, for the heaviest added word


# The candidate lists as chosen with the earlier fused ranking on both corpora (README, "Public conversations"):
# sharing with neighbours and the feedback search each held every figure of the project's corpus and lifted LoCoMo.
MEMORY_CANDIDATES = CandidateParams()

# Each signal's weight (`memory/ranking.SIGNALS`), learned by `benchmarks/tune_fusion.py` on the project's conversation
# and LoCoMo dev at once, steering by R@1 + MRR + R@10 from the fusion that shipped before and never costing either
# corpus its R@1 + MRR or its R@10 (docs/benchmarks.md, "Learned ranking, cross-validated"). `log`,
# `session` and `used` appear in neither corpus and keep the factors set by hand before (x0.37, x1.1, x1.03 per
# e-fold of uses); `outdated` keeps its x0.7, tuned on how often an outdated version came first. `ends_asking`, added
# later, was learned alone with the rest kept (`tune_fusion.ADDED`): relearning them all moves weights it has nothing to
# do with, and with the signal added before it put a user's earlier question above the decision that answers it.
LEARNED_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "places": 0.9, "bm25_place": 0.0, "dense_place": 0.0, "bm25": 0.3, "cosine": 0.0, "cosine_gap": 0.0,
        "coverage": 0.25, "from_neighbour": 0.55, "exact": 0.1, "bm25_first": 1.15, "dense_first": 0.0, "question": -1.011,
        "acknowledgement": -1.204, "log": -1.0, "decided": 0.347, "typed": 0.301, "summary": -0.805, "fresh": 0.95,
        "timely": 0.512, "outdated": -0.357, "session": 0.095, "used": 0.03, "ends_asking": -0.4,
    }
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class RankingParams:
    """How recalled memories are found and ordered (`memory/ranking.py`).

    The weights are learned (above). The half-life, the floor and the outdated-turn tests were tuned on
    `benchmarks/retrieval.py` before; the identifier rule and the restatement share were set by hand.
    """

    fusion: CandidateParams = MEMORY_CANDIDATES
    weights: Mapping[str, float] = field(default_factory=lambda: LEARNED_WEIGHTS)
    half_life_days: float = 7.0  # the `fresh` signal halves every this many days (LEDGER_RECENCY_HALF_LIFE_DAYS)
    no_decay_kinds: frozenset[str] = frozenset({"decision", "definition"})  # they hold until superseded, however old
    successors_first: bool = True  # a superseded memory or outdated turn right after what replaced it (off in a time window)
    outdated_turn_similarity: float = 0.6  # a turn this close to a decision recorded after it shares its fate
    outdated_turn_wording: float = 0.7  # ... as does one with this share of its content words (4 or more) in it
    floor: float = 0.24  # relevance (cosine or query-term coverage) a result needs (LEDGER_MIN_RELEVANCE)
    exact_most: int = 3  # an identifier the query names that at most this many candidates hold puts them first (set by hand)
    restated_share: float = 0.6  # of a turn's content words in a decision, definition or constraint: it restates it
    # A question, acknowledgement or log line scoring more than this below the best result is left out: with its act's
    # weight (about -1) taken off, it is shown only when it matches better than any statement does.
    echo_margin: float = 1.0


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
