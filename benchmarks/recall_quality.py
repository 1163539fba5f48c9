"""Retrieval quality of `recall` on a synthetic project corpus: BM25 alone, dense alone, and fusion settings.

    python benchmarks/recall_quality.py            # prints the table and the chosen settings
    python benchmarks/recall_quality.py --write    # also updates the README's quality table

The corpus (`data/recall_corpus.json`, 360 memories, 122 labelled queries of
three kinds: paraphrase, identifier, keyword) is written for this project. The
memories go through the real service (journal, offline model, Qdrant Edge);
the fusion grid then runs against that index. To keep the choice honest the
grid is also scored with 2-fold cross-validation over the queries: settings
picked on one half, scored on the other.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from project_ledger.config import Settings
from project_ledger.factory import open_ledger
from project_ledger.indexers.search_index import FusionParams, SearchFilter, fuse

HERE = Path(__file__).parent
CORPUS = HERE / "data" / "recall_corpus.json"


@dataclass(frozen=True)
class Scores:
    recall_at_5: float
    mrr_at_10: float
    ndcg_at_10: float

    def row(self) -> str:
        return f"{self.recall_at_5:.3f} | {self.mrr_at_10:.3f} | {self.ndcg_at_10:.3f}"


def score(rankings: list[list[str]], relevant: list[set[str]]) -> Scores:
    r5, mrr, ndcg = [], [], []
    for ranked, gold in zip(rankings, relevant, strict=True):
        r5.append(len(gold & set(ranked[:5])) / len(gold))
        rank = next((i for i, key in enumerate(ranked[:10]) if key in gold), None)
        mrr.append(0.0 if rank is None else 1 / (rank + 1))
        dcg = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:10]) if key in gold)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), 10)))
        ndcg.append(dcg / ideal)
    return Scores(statistics.fmean(r5), statistics.fmean(mrr), statistics.fmean(ndcg))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    corpus = json.loads(CORPUS.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        ledger = open_ledger(Settings(root=Path(tmp), data_dir=Path(tmp) / "data"), Path(tmp))
        ledger.sync.open_now()
        ledger.sync.embedder.load()
        key_of: dict[str, str] = {}
        for memory in corpus["memories"]:
            result = ledger.remember(memory["text"], kind=memory["kind"], tags=memory["tags"], session=memory["session"])
            key_of[result.id] = memory["key"]
        while ledger.sync.embed_missing(128):
            pass
        ledger.sync.catch_up()
        seq_to_key = {seq: key_of[m.id] for seq, m in ledger.journal.get_by_seqs(list(range(1, 10_000))).items()}

        queries = corpus["queries"]
        dense = [ledger.sync.embedder.embed_query(q["query"]).tolist() for q in queries]
        relevant = [set(q["relevant"]) for q in queries]
        everything = SearchFilter(include_superseded=True)

        found = {
            c: [ledger.sync.candidates(q["query"], dense[i], everything, c) for i, q in enumerate(queries)] for c in (20, 50, 100)
        }

        def run(fusion: FusionParams, subset: list[int], only: str | None = None) -> Scores:
            rankings = []
            for i in subset:
                candidates = found[fusion.candidates][i]
                hits = getattr(candidates, only)[:10] if only else fuse(candidates, fusion, 10)
                rankings.append([seq_to_key[h.seq] for h in hits])
            return score(rankings, [relevant[i] for i in subset])

        all_queries = list(range(len(queries)))
        by_type = {kind: [i for i, q in enumerate(queries) if q["type"] == kind] for kind in ("paraphrase", "identifier", "keyword")}
        grid = [
            FusionParams(k=k, dense_weight=dw, sparse_weight=1.0, candidates=c)
            for k, dw, c in itertools.product((2, 5, 10, 20, 60), (0.25, 0.5, 0.75, 1.0, 1.5, 2.0), (20, 50, 100))
        ]
        full = {params: run(params, all_queries) for params in grid}
        best = max(grid, key=lambda p: (full[p].ndcg_at_10, full[p].mrr_at_10))

        halves = (all_queries[0::2], all_queries[1::2])
        cv = []
        for train, test in (halves, halves[::-1]):
            chosen = max(grid, key=lambda p: run(p, train).ndcg_at_10)
            cv.append((chosen, run(chosen, test)))

        rows = [
            ("BM25 alone", lambda subset: run(FusionParams(), subset, only="sparse")),
            ("dense alone", lambda subset: run(FusionParams(), subset, only="dense")),
            ("plain RRF (k=60, equal weights)", lambda subset: run(FusionParams(k=60), subset)),
            (
                f"tuned: k={best.k}, dense weight {best.dense_weight}, {best.candidates} candidates",
                lambda subset: run(best, subset),
            ),
        ]
        lines = [
            "| method | Recall@5 | MRR@10 | nDCG@10 | nDCG@10 paraphrase | identifier | keyword |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, fn in rows:
            per_type = " | ".join(f"{fn(by_type[t]).ndcg_at_10:.3f}" for t in by_type)
            lines.append(f"| {name} | {fn(all_queries).row()} | {per_type} |")
        cv_ndcg = statistics.fmean(s.ndcg_at_10 for _, s in cv)
        lines.append("")
        lines.append(
            f"2-fold cross-validated nDCG@10 of the tuning procedure: {cv_ndcg:.3f} "
            f"(settings chosen per fold: {', '.join(f'k={p.k}/w={p.dense_weight}/c={p.candidates}' for p, _ in cv)})."
        )
        ledger.close()
    table = "\n".join(lines)
    print(table)
    print(f"\nbest: {best}", file=sys.stderr)
    if args.write:
        from readme_table import replace_section

        replace_section("recall-quality", table)


if __name__ == "__main__":
    main()
