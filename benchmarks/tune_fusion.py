"""Learn recall's signal weights on two corpora at once, and score them on conversations they were not learned on.

    python benchmarks/tune_fusion.py            # learns, prints the weights and the tables
    python benchmarks/tune_fusion.py --write    # also writes results/ranking.json and its table in docs/benchmarks.md

The corpora: the project's own conversation (`benchmarks/retrieval.py`, 176 questions in 13 sessions) and the
LoCoMo dev split (`benchmarks/locomo.py`, 997 questions in 5 conversations). Every candidate of every question
gets the ranking's signals (`memory/ranking.SIGNALS`) exactly as `recall` computes them; a candidate answers when
it is one of the question's evidence turns or memories (a memory captured from a turn counts as that turn).

How: coordinate ascent on R@1 + MRR + R@10 (the top, and what ten results reach), the two corpora weighing the same, from the
ranking that shipped before (reciprocal-rank fusion of the two lists times hand-tuned factors, `START`, which the
signals express exactly). A step (one weight moved by 0.5, 0.2, 0.1 or 0.05) is taken only when it improves that
sum and neither corpus loses more than `SLACK` of its own R@1 + MRR, or of its R@10, against the start: a change
that helps one corpus and hurts the other is not an improvement. The signals neither corpus has (`log`, `session`,
`used`) keep the weights set by hand, and `outdated` its tuned factor. A listwise softmax fit was tried first: it won
LoCoMo's top and cost the project's corpus 0.05 of R@1 even in-sample.

Validation that predicts unseen data: leave one group out. LoCoMo's five conversations are the five folds; the
project's thirteen sessions are dealt into five groups by the session of each question's first evidence. Each
fold learns on the other four of both corpora and is scored on its own; the folds' figures, weighted by their
questions, are the cross-validated ones. Scores go through the whole of recall's ranking: the relevance floor,
exact identifiers first, outdated versions after what replaced them, and `arrange`.

A rerun need not learn the shipped weights again: the candidate lists vary a little from run to run (the start's
LoCoMo R@1 moves by 0.001) and coordinate ascent follows such ties, so the table shows the weights this run learned
beside the shipped ones when they differ. The cross-validated row measures the procedure, not one set of weights.

A signal added later (`ADDED`) can be learned alone, from 0, with every other weight kept as shipped; the table
shows that cross-validated too (each fold learns only the added weights; the others were learned on every question
before, so for them the row is in-sample). Relearning everything moves weights the new signal has nothing to do
with, and with them behaviour neither corpus measures: `ends_asking` ships that way. Relearning every weight with the
signal before it (`named_head`, since gone) let a user's earlier question outrank the decision that answers it
(`tests/test_hook_socket.py`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import common
import locomo
import retrieval
from project_ledger.memory.ranking import SIGNALS
from project_ledger.search.tuning import RankingParams

# Kept at the start's weights: `log`, `session` and `used` are in neither corpus; `outdated` is, but what it is for (no
# outdated version above the one that replaced it) is not what R@1 + MRR measure (`retrieval.py` counts it).
FIXED = ("log", "session", "used", "outdated")
LEARNED = tuple(name for name in SIGNALS if name not in FIXED)
# The ranking before: RRF (k=10) of the two lists, times kind factors (decision 1.1, other memories 1, turn 0.95, gist 0.7), a recency
# share of 0.3, outdated x0.7, a time boost x1.3, the dialogue-act factors (a log line's x0.37 and the session's and
# use's factors set by hand, kept as they are), as log weights of the signals.
START: dict[str, float] = {
    "places": 1.0, "decided": 0.147, "typed": 0.051, "summary": -0.305, "fresh": 1.0, "outdated": -0.357, "timely": 0.262,
    "question": -0.511, "acknowledgement": -1.204, "log": -1.0, "session": 0.095, "used": 0.03,
}  # fmt: skip
# Signals added since the shipped weights were learned: `added_alone` learns only them, on top of the shipped weights,
# and the table shows that cross-validated beside learning everything again.
ADDED = ("ends_asking",)
STEPS = (0.5, 0.2, 0.1, 0.05)
ROUNDS = 3
SLACK = 0.005  # of R@1 + MRR, and of R@10, a corpus may lose against the start: about one of the project's questions
FOLDS = 5
DEPTH = 20  # places scored: MRR counts the first answer in the top 20 on LoCoMo and the top 10 on the project's corpus


@dataclass
class Corpus:
    """One corpus: per question, its candidates' signal matrix, the answer each candidate counts as (its turn, for a
    captured memory) and the evidence groups; its fold; and how to score a setting on any subset of its questions
    through the whole ranking (R@1, R@5, R@10, MRR)."""

    name: str
    signals: list[np.ndarray]  # per question: candidates x LEARNED
    answers: list[list[int]]  # per question: the seq each candidate counts as
    evidence: list[list[set[int]]]
    mrr_depth: int
    fold: list[int]
    score: Callable[[RankingParams, Sequence[int]], tuple[float, float, float, float]]
    alone: Callable[[str], tuple[float, float, float, float]]  # one list alone ("bm25", "dense") on every question

    def quick(self, weights: np.ndarray, subset: Sequence[int]) -> tuple[float, float]:
        """R@1 + MRR, and R@10, of candidates ordered by `weights` alone (no floor, no rules): what learning steers by."""
        top, reach = 0.0, 0.0
        for i in subset:
            order = np.argsort(-(self.signals[i] @ weights), kind="stable")
            seen = list(dict.fromkeys(self.answers[i][j] for j in order[:DEPTH * 2]))[:DEPTH]
            every, groups = set().union(*self.evidence[i]), self.evidence[i]
            first = next((n for n, seq in enumerate(seen[: self.mrr_depth]) if seq in every), None)
            top += sum(bool(g & set(seen[:1])) for g in groups) / len(groups) + (0.0 if first is None else 1 / (first + 1))
            reach += sum(bool(g & set(seen[:10])) for g in groups) / len(groups)
        return top / len(subset), reach / len(subset)


def matrices(candidates: Sequence, parent: dict[int, int]) -> tuple[np.ndarray, list[int]]:
    """The candidates' signals and the seqs they count as, in seq order: what is learned must not depend on the order
    the shipped weights put them in (ties are broken by it)."""
    candidates = sorted(candidates, key=lambda c: c.seq)
    rows = np.array([[c.sources.signals.get(name, 0.0) for name in LEARNED] for c in candidates], dtype=np.float64)
    return rows.reshape(len(candidates), len(LEARNED)), [parent.get(c.seq, c.seq) for c in candidates]


def own_corpus(tmp: Path) -> Corpus:
    data = json.loads(retrieval.CONVERSATION.read_text())
    ledger = locomo.open_bench_ledger(tmp)
    replay = retrieval.Replay(ledger, data)
    questions = retrieval.questions_of(data, replay.seq_of)
    pool = retrieval.pools(ledger, [q.text for q in questions], [q.where for q in questions])
    session_of = {replay.seq_of[t["id"]]: s["id"] for s in data["sessions"] for t in s["turns"]}
    session_of |= {replay.seq_of[m["id"]]: m["session"] for m in data["memories"]}
    sessions = sorted({s["id"] for s in data["sessions"]})
    signals, answers, fold = [], [], []
    for i, q in enumerate(questions):
        x, seqs = matrices(retrieval.ranked_candidates(pool, i, RankingParams(), floor=0.0), pool.parent_seq)
        signals.append(x)
        answers.append(seqs)
        fold.append(sessions.index(session_of[min(q.evidence[0])]) % FOLDS)

    def score(params: RankingParams, subset: Sequence[int], method: str = "full") -> tuple[float, float, float, float]:
        s = retrieval.score(retrieval.rankings(pool, subset, method, params, params.floor), [questions[i] for i in subset])
        return s.r1, s.r5, s.r10, s.mrr

    def alone(method: str) -> tuple[float, float, float, float]:
        return score(RankingParams(), range(len(questions)), method)

    return Corpus("own conversation", signals, answers, [q.evidence for q in questions], 10, fold, score, alone)


def locomo_corpus(tmp: Path) -> Corpus:
    bench = locomo.Locomo(locomo.DATA, tmp)
    conversations = sorted({item.where.session for item in bench.items})
    signals, answers, fold = [], [], []
    for i, item in enumerate(bench.items):
        x, seqs = matrices(retrieval.ranked_candidates(bench.pool, i, RankingParams(), floor=0.0), bench.pool.parent_seq)
        signals.append(x)
        answers.append(seqs)
        fold.append(conversations.index(item.where.session))

    def score(params: RankingParams, subset: Sequence[int], method: str = "full") -> tuple[float, float, float, float]:
        f = bench.score(method, params, subset, floor=params.floor)
        return f.recall[1], f.recall[5], f.recall[10], f.mrr

    def alone(method: str) -> tuple[float, float, float, float]:
        return score(RankingParams(), range(len(bench.items)), method)

    return Corpus("LoCoMo dev", signals, answers, [item.evidence for item in bench.items], 20, fold, score, alone)


Learner = Callable[[Sequence[Corpus], Sequence[Sequence[int]]], dict[str, float]]


def learn(
    corpora: Sequence[Corpus], chosen: Sequence[Sequence[int]], start: Mapping[str, float] = START, free: Sequence[str] = LEARNED
) -> dict[str, float]:
    """Weights learned on the `chosen` questions of each corpus (see the module's docstring): the `free` ones moved from
    `start`, the rest kept there."""
    w = np.array([start.get(name, 0.0) for name in LEARNED])
    before = [c.quick(w, subset) for c, subset in zip(corpora, chosen, strict=True)]

    def value(candidate: np.ndarray) -> float | None:
        found = [c.quick(candidate, subset) for c, subset in zip(corpora, chosen, strict=True)]
        if any(now[0] < then[0] - SLACK or now[1] < then[1] - SLACK for now, then in zip(found, before, strict=True)):
            return None
        return sum(top + reach for top, reach in found) / len(found)

    best = value(w) or 0.0
    for _ in range(ROUNDS):
        moved = False
        for n in (LEARNED.index(name) for name in free):
            for step in (s * sign for s in STEPS for sign in (1, -1)):
                candidate = w.copy()
                candidate[n] += step
                if (found := value(candidate)) is not None and found > best + 1e-9:
                    best, w, moved = found, candidate, True
        if not moved:
            break
    return {**{name: round(float(v), 3) + 0.0 for name, v in zip(LEARNED, w, strict=True)}, **{n: start.get(n, START[n]) for n in FIXED}}


def added_alone(corpora: Sequence[Corpus], chosen: Sequence[Sequence[int]]) -> dict[str, float]:
    """The shipped weights, with only the signals added since they were learned (`ADDED`) learned from 0."""
    shipped = {**RankingParams().weights, **dict.fromkeys(ADDED, 0.0)}
    return learn(corpora, chosen, shipped, ADDED)


def with_weights(weights: dict[str, float]) -> RankingParams:
    return replace(RankingParams(), weights={name: weights.get(name, 0.0) for name in SIGNALS})


def cross_validated(corpora: Sequence[Corpus], learner: Learner = learn) -> dict[str, tuple[float, ...]]:
    """Each corpus's figures, each question scored by the weights learned without its fold, weighted by questions."""
    sums = {c.name: np.zeros(4) for c in corpora}
    for held in range(FOLDS):
        train = [[i for i, f in enumerate(c.fold) if f != held] for c in corpora]
        params = with_weights(learner(corpora, train))
        for c in corpora:
            test = [i for i, f in enumerate(c.fold) if f == held]
            if test:
                sums[c.name] += np.array(c.score(params, test)) * len(test)
    return {c.name: tuple(float(v) for v in sums[c.name] / len(c.fold)) for c in corpora}


def weights_source(weights: dict[str, float]) -> str:
    """The weights as `search/tuning.py` writes them."""
    return "{" + ", ".join(f'"{name}": {weights[name]:g}' for name in SIGNALS) + "}"


def row(name: str, figures: dict[str, tuple[float, ...]], corpora: Sequence[Corpus]) -> str:
    return f"| {name} | " + " | ".join(" / ".join(f"{v:.3f}" for v in figures[c.name]) for c in corpora) + " |"


def named(by: dict[str, tuple[float, ...]]) -> dict[str, dict[str, float]]:
    """Each corpus's figures by name, to the three places the tables show."""
    return {name: {k: round(v[i], 3) for i, k in enumerate(("R@1", "R@5", "R@10", "MRR"))} for name, v in by.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write results/ranking.json and the table in docs/benchmarks.md")
    args = parser.parse_args()
    loads = [common.load()]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as own_tmp, tempfile.TemporaryDirectory() as locomo_tmp:
        corpora = [own_corpus(Path(own_tmp)), locomo_corpus(Path(locomo_tmp))]
        everything = [range(len(c.fold)) for c in corpora]
        cross = cross_validated(corpora)
        added_cross = cross_validated(corpora, added_alone)
        learned = learn(corpora, everything)
        alone = added_alone(corpora, everything)
        added = {name: alone[name] for name in ADDED}
        shipped = dict(RankingParams().weights)
        without = {name: 0.0 if name in ADDED else weight for name, weight in shipped.items()}
        before = {c.name: c.score(with_weights(START), range(len(c.fold))) for c in corpora}
        in_sample = {c.name: c.score(with_weights(shipped), range(len(c.fold))) for c in corpora}
        before_added = {c.name: c.score(with_weights(without), range(len(c.fold))) for c in corpora}
        relearned = {c.name: c.score(with_weights(learned), range(len(c.fold))) for c in corpora}
        legs = {leg: {c.name: c.alone(leg) for c in corpora} for leg in ("bm25", "dense")}
    new_signals = ", ".join(f"`{name}`" for name in ADDED)
    lines = [
        "| ranking | " + " | ".join(f"{c.name} R@1 / R@5 / R@10 / MRR" for c in corpora) + " |",
        "|---|" + "---|" * len(corpora),
        row("BM25 alone (the ledger's BM25 list; nothing learned, so held-out and in-sample are one)", legs["bm25"], corpora),
        row("dense alone (the ledger's dense list; nothing learned)", legs["dense"], corpora),
        row("before: reciprocal-rank fusion times hand-tuned factors (the start), in-sample", before, corpora),
        row("every weight learned again, cross-validated (each fold learned without it)", cross, corpora),
        row(f"the shipped weights without {new_signals}, in-sample (learned on every question before)", before_added, corpora),
        row(f"the shipped weights, {new_signals} alone learned in each fold, cross-validated", added_cross, corpora),
        row("learned weights as shipped (search/tuning.py), in-sample", in_sample, corpora),
    ]
    if learned != shipped:
        lines.append(row("every weight this run learned on every question, in-sample", relearned, corpora))
    note = (
        f"{len(LEARNED)} weights learned ({new_signals} also alone, the others as shipped), {len(FIXED)} set by hand "
        f"({', '.join(FIXED)}); plus the candidate lists' sizes, "
        "the neighbour share, the feedback search's hits and the relevance floor, tuned before. Folds: LoCoMo's 5 "
        f"conversations, and the project's 13 sessions dealt into {FOLDS} groups. "
        f"{(time.perf_counter() - started) / 60:.1f} min."
    )
    print("\n".join(lines), note, "", "weights this run learned, for search/tuning.py:", weights_source(learned), sep="\n")
    print(f"{new_signals} learned alone on every question: {added} (shipped: { {name: shipped[name] for name in ADDED} })")
    if args.write:
        figures = {
            "weights": shipped,
            "folds": f"leave one of {FOLDS} groups out: LoCoMo by conversation, the project's corpus by session",
            "cross_validated": named(cross),
            "added_alone_cross_validated": named(added_cross),
            "without_added": named(before_added),
            "added_learned_this_run": added,
            "in_sample": named(in_sample),
            "before": named(before),
            **{f"{leg}_alone": named(by) for leg, by in legs.items()},
            "learned_this_run": learned,
        }
        command = "python benchmarks/tune_fusion.py --write"
        common.publish("ranking", "\n".join([*lines, "", note]), True, command=command, loads=[*loads, common.load()], figures=figures)


if __name__ == "__main__":
    main()
