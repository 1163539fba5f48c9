"""Tune recall's fusion on both corpora at once, with 2-fold cross-validation, so the choice is not a fit to one.

    python benchmarks/tune_fusion.py

The corpora: the project's own conversation (`benchmarks/retrieval.py`) and the LoCoMo dev split
(`benchmarks/locomo.py`). Each candidate setting (RRF k, dense weight, candidates per leg, the share of a BM25 hit's
score lent to the turns next to it, `fusion.with_neighbours`, whether the BM25 list is the one widened with the words
its best hits share, `fusion.with_feedback`, with the default number of hits, terms and weight, and whether BM25-only
candidates get their own cosine, `fusion.with_meaning`), and then, on the shipped fusion, how much a question that
asks when lifts the memories that say when (`RankingParams.time_lift` and `time_boost`; off in the fusion grid), ranks
every question of both; the other signals
(recency, kinds, outdated turns) stay at their defaults. `--without-meaning` also scores every setting
without the cosines, to show what they buy.

A setting's quality on a corpus is R@5 + R@10 + MRR. It is chosen by the sum over both corpora, among the
settings that keep the old defaults' R@5, R@10 and MRR on each corpus, each within 0.01 (about two of the
project's 176 questions), and that put an outdated decision first for no more of the project's questions: one that
helps one corpus and hurts the other is not an improvement. (Holding R@10 alone let LoCoMo's gains buy a setting
that cost the project's corpus 0.024 of MRR and four more questions whose outdated decision ranked first; with the
feedback search, RRF k=5 and the dense list at 0.75 held R@5, R@10 and MRR but still put an outdated decision first
for four more.) Cross-validation: questions
are split in halves (alternating), the choice is made on one half of each corpus and scored on the other
halves, both ways.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from project_ledger.search.tuning import MEMORY_FUSION, FusionParams, RankingParams

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import locomo  # noqa: E402  (sibling scripts, not a package)
import retrieval  # noqa: E402


@dataclass(frozen=True)
class Setting:
    fusion: FusionParams
    meaning: bool  # BM25-only candidates ranked on their cosine too
    time: tuple[float, float] = (0.0, 0.0)  # time_lift and time_boost, for questions that ask when (`time_words`)

    def label(self) -> str:
        f = self.fusion
        meaning = "yes" if self.meaning else "no"
        return (
            f"k={f.k}, dense weight {f.dense_weight:g}, {f.candidates} per leg, neighbour share {f.neighbour_share:g}, "
            f"feedback from {f.feedback_hits} hits, cosine for BM25-only: {meaning}, time lift {self.time[0]:g} boost {self.time[1]:g}"
        )

    def params(self) -> RankingParams:
        return replace(RankingParams(), fusion=self.fusion, time_lift=self.time[0], time_boost=self.time[1])


@dataclass
class Corpus:
    """A corpus's questions, and a way to rank them all under a setting (R@k scored on any subset)."""

    name: str
    size: int
    rank_all: Callable[[Setting], list[list[int]]]
    score: Callable[[list[list[int]], Sequence[int]], tuple[float, float, float]]  # R@5, R@10, MRR on a subset
    outdated: Callable[[list[list[int]], Sequence[int]], int] = lambda found, subset: 0  # questions with an old version first


def own_corpus(tmp: Path) -> Corpus:
    data = __import__("json").loads(retrieval.CONVERSATION.read_text())
    ledger = locomo.open_bench_ledger(tmp)
    replay = retrieval.Replay(ledger, data)
    questions = retrieval.questions_of(data, replay.seq_of)
    pool = retrieval.pools(ledger, [q.text for q in questions], [q.where for q in questions])
    everything = list(range(len(questions)))

    def rank_all(setting: Setting) -> list[list[int]]:
        used = pool if setting.meaning else replace(pool, cosines=[{}] * len(questions))
        return retrieval.rankings(used, everything, "full", setting.params())

    def score(found: list[list[int]], subset: Sequence[int]) -> tuple[float, float, float]:
        s = retrieval.score([found[i] for i in subset], [questions[i] for i in subset])
        return s.r5, s.r10, s.mrr

    def outdated(found: list[list[int]], subset: Sequence[int]) -> int:
        return retrieval.superseded_first([found[i] for i in subset], [questions[i] for i in subset])

    return Corpus("own conversation", len(questions), rank_all, score, outdated)


def locomo_corpus(tmp: Path) -> Corpus:
    return locomo_corpus_of(locomo.Locomo(locomo.DATA, tmp))


def locomo_corpus_of(bench: locomo.Locomo) -> Corpus:
    pool, items = bench.pool, bench.items

    def rank_all(setting: Setting) -> list[list[int]]:
        used = pool if setting.meaning else replace(pool, cosines=[{}] * len(items))
        return [locomo.ranked(used, i, "full", setting.params()) for i in range(len(items))]

    def score(found: list[list[int]], subset: Sequence[int]) -> tuple[float, float, float]:
        f = locomo.figures([found[i] for i in subset], [items[i] for i in subset])
        return f.recall[5], f.recall[10], f.mrr

    return Corpus("LoCoMo dev", len(items), rank_all, score)


# Every setting gives BM25-only candidates their cosine: besides ranking, it lets the relevance floor judge them on
# meaning and not on shared words alone. The settings without it are scored for the record (`--without-meaning`).
SETTINGS = [
    Setting(FusionParams(k=k, dense_weight=w, candidates=c, neighbour_share=share, feedback_hits=hits), meaning=True)
    for k, w, c, share, hits in itertools.product((3, 5, 10), (0.6, 0.75, 1.0), (50,), (0.0, 0.3, 0.5, 0.7), (0, 3))
]
# Then, on the shipped fusion, how far a question that asks when lifts the memories that say when (`time_words`):
# in the dense list's order as if that much closer in meaning, and as a factor on the score.
SETTINGS += [
    Setting(MEMORY_FUSION, meaning=True, time=(lift, boost))
    for lift, boost in itertools.product((0.0, 0.02, 0.05, 0.1), (0.0, 0.1, 0.2, 0.3, 0.5))
    if lift or boost
]
SLACK = 0.01  # R@5, R@10 or MRR a corpus may lose and still count as held: about two questions of the project's 176
# The baseline every step is held against: the fusion that shipped before neighbour sharing and the feedback search
# (held against each step's predecessor instead, small losses could add up past SLACK).
DEFAULT = Setting(locomo.UNSHARED, meaning=True)
Choice = TypeVar("Choice", bound=Hashable)  # what a tuning script ranks with: a Setting here, a pair in tune_time.py


def choose(
    results: dict[Choice, dict[str, list[list[int]]]],
    corpora: list[Corpus],
    subsets: dict[str, Sequence[int]],
    baseline: Choice,
) -> Choice:
    """The key of `results` with the largest R@5 + R@10 + MRR summed over both corpora, among those that keep each
    corpus's R@5, R@10 and MRR within SLACK of `baseline`'s and put an outdated decision first no more often."""
    floor = {c.name: c.score(results[baseline][c.name], subsets[c.name]) for c in corpora}
    stale = {c.name: c.outdated(results[baseline][c.name], subsets[c.name]) for c in corpora}

    def quality(setting: Choice) -> tuple[bool, float]:
        scores = {c.name: c.score(results[setting][c.name], subsets[c.name]) for c in corpora}
        holds = all(now >= before - SLACK for name in floor for now, before in zip(scores[name], floor[name], strict=True))
        holds = holds and all(c.outdated(results[setting][c.name], subsets[c.name]) <= stale[c.name] for c in corpora)
        return holds, sum(sum(s) for s in scores.values())

    return max(results, key=quality)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--without-meaning", action="store_true", help="also try each setting without BM25-only cosines")
    if parser.parse_args().without_meaning:
        SETTINGS.extend(replace(setting, meaning=False) for setting in list(SETTINGS))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as own_tmp, tempfile.TemporaryDirectory() as locomo_tmp:
        corpora = [own_corpus(Path(own_tmp)), locomo_corpus(Path(locomo_tmp))]
        results = {setting: {c.name: c.rank_all(setting) for c in corpora} for setting in [DEFAULT, *SETTINGS]}
    whole = {c.name: range(c.size) for c in corpora}
    halves = {c.name: (list(range(0, c.size, 2)), list(range(1, c.size, 2))) for c in corpora}
    lines = ["| fold | chosen on the other half | " + " | ".join(f"{c.name} R@10 (defaults → chosen)" for c in corpora) + " |",
             "|---|---|" + "---|" * len(corpora)]  # fmt: skip
    cross = {c.name: [] for c in corpora}
    for fold in (0, 1):
        train = {name: h[fold] for name, h in halves.items()}
        test = {name: h[1 - fold] for name, h in halves.items()}
        chosen = choose(results, corpora, train, DEFAULT)
        cells = []
        for c in corpora:
            before = c.score(results[DEFAULT][c.name], test[c.name])[1]
            after = c.score(results[chosen][c.name], test[c.name])[1]
            cross[c.name].append(after)
            cells.append(f"{before:.3f} → {after:.3f}")
        lines.append(f"| {fold + 1} | {chosen.label()} | " + " | ".join(cells) + " |")
    final = choose(results, corpora, whole, DEFAULT)
    lines += ["", "On all questions (and the own conversation's questions with an outdated decision first):", "",
              "| setting | " + " | ".join(f"{c.name} R@5 / R@10 / MRR" for c in corpora) + " |",
              "|---|" + "---|" * len(corpora)]  # fmt: skip
    ranked = sorted(SETTINGS, key=lambda s: sum(sum(c.score(results[s][c.name], whole[c.name])) for c in corpora), reverse=True)
    runners_up = [(f"{n + 2}.", s) for n, s in enumerate([s for s in ranked if s != final][:5])]
    for name, setting in (("before (defaults)", DEFAULT), ("chosen", final), *runners_up):
        cells = [
            " / ".join(f"{x:.3f}" for x in c.score(results[setting][c.name], whole[c.name]))
            + (f" ({stale} outdated first)" if (stale := c.outdated(results[setting][c.name], whole[c.name])) else "")
            for c in corpora
        ]
        lines.append(f"| {name}: {setting.label()} | " + " | ".join(cells) + " |")
    lines += ["", "Cross-validated R@10 (mean of the two held-out halves): "
              + ", ".join(f"{name} {statistics.fmean(v):.3f}" for name, v in cross.items()) + ".",
              f"{len(SETTINGS)} settings; {(time.perf_counter() - started) / 60:.1f} min."]  # fmt: skip
    print("\n".join(lines))


if __name__ == "__main__":
    main()
