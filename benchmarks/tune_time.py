"""Tune how far a question that asks when lifts the memories that say when, leaving one LoCoMo conversation out.

    python benchmarks/tune_time.py

`RankingParams.time_lift` (the dense order, `fusion.with_time`) and `time_boost` (a factor on the score), on the
shipped fusion, over a grid, ranking every question of both corpora (`tune_fusion.py` builds them). The choice
follows `tune_fusion.py`'s rule: the largest R@5 + R@10 + MRR summed over both corpora, among the pairs that keep
each corpus's R@5, R@10 and MRR within 0.01 of the ranking without time signals and put an outdated decision first
for no more of the project's questions.

Cross-validation, closer to the held-back LoCoMo split than halves of the questions: five folds, each leaving out
one LoCoMo conversation (and every fifth of the project's questions); the pair is chosen on the rest and scored on
what was left out. The held-out figures are pooled over the five folds.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path

import tune_fusion
from project_ledger.search.tuning import MEMORY_FUSION, RankingParams
from tune_fusion import Setting

GRID = [
    (0.0, 0.0),
    *itertools.product((0.02, 0.05, 0.08, 0.1, 0.15), (0.0, 0.1, 0.2, 0.3, 0.5)),
    *((0.0, b) for b in (0.1, 0.3, 0.5)),
]
OFF = (0.0, 0.0)


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as own_tmp, tempfile.TemporaryDirectory() as locomo_tmp:
        own = tune_fusion.own_corpus(Path(own_tmp))
        bench = tune_fusion.locomo.Locomo(tune_fusion.locomo.DATA, Path(locomo_tmp))
        conversation = [item.where.session for item in bench.items]
        loco = tune_fusion.locomo_corpus_of(bench)
        corpora = [own, loco]
        results = {pair: {c.name: c.rank_all(Setting(MEMORY_FUSION, meaning=True, time=pair)) for c in corpora} for pair in GRID}
        bench.ledger.close()
    names = sorted(set(conversation))
    folds = [
        {
            own.name: [i for i in range(own.size) if i % len(names) == n],
            loco.name: [i for i, c in enumerate(conversation) if c == name],
        }
        for n, name in enumerate(names)
    ]
    chosen = []
    held: dict[str, list[list[int]]] = {c.name: [[] for _ in range(c.size)] for c in corpora}
    for fold in folds:
        train = {c.name: sorted(set(range(c.size)) - set(fold[c.name])) for c in corpora}
        pair = tune_fusion.choose(results, corpora, train, OFF)
        chosen.append(pair)
        for c in corpora:
            for i in fold[c.name]:
                held[c.name][i] = results[pair][c.name][i]
    everything = {c.name: range(c.size) for c in corpora}
    final = tune_fusion.choose(results, corpora, everything, OFF)
    shipped = (RankingParams().time_lift, RankingParams().time_boost)
    lines = [
        "| ranking | " + " | ".join(f"{c.name} R@5 / R@10 / MRR" for c in corpora) + " |",
        "|---|" + "---|" * len(corpora),
    ]
    rows = [
        ("no time signals", results[OFF]),
        (f"shipped pair {shipped}", results.get(shipped)),
        (f"chosen on all questions {final}", results[final]),
    ]
    for label, found in [*rows, ("cross-validated (each fold's choice on its held-out questions)", held)]:
        if found is not None:
            lines.append(
                f"| {label} | "
                + " | ".join(" / ".join(f"{x:.3f}" for x in c.score(found[c.name], everything[c.name])) for c in corpora)
                + " |"
            )
    lines += [
        "",
        "Chosen per fold (LoCoMo conversation left out): "
        + ", ".join(f"{name} {pair}" for name, pair in zip(names, chosen, strict=True))
        + ".",
        f"{len(GRID)} pairs; {(time.perf_counter() - started) / 60:.1f} min.",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
