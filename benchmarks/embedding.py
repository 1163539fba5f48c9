"""Embedding throughput with the shipped model: code-symbol texts and memories, in texts per second and in
CPU seconds, the previous way of embedding next to the shipped one in the same run.

    python benchmarks/embedding.py             # rich and click symbols, memories; 3 runs (about 10 minutes)
    python benchmarks/embedding.py --write     # also updates the README's embedding section

Texts: `--texts` distinct symbol texts (`StoredSymbol.embed_text`, what the code search worker embeds) drawn
from each tree after `project-ledger index`, and as many memory texts (the project's recall corpus, then
LoCoMo dev turns from ../shared/data/locomo-dev.json when present). Each is handed to the embedder in the
chunks its caller uses (the code search worker's EMBED_BATCH, the index sync's EMBED_BATCH).

Ways of embedding, run interleaved (`--runs` rounds, medians):
- before: the bundled model through fastembed (`FastEmbedEmbedder`, ONNX Runtime's arena on, batches of 8
  texts by character length, spread over all cores), as the ledger ran it before;
- float, 256 tokens: a session of the model's float products on all cores, how code symbols were embedded
  before they got their own way, memories before they moved to the integer session, and queries until they
  moved too (the server no longer makes it);
- shipped: what the server runs (`create_embedder`, all cores): ONNX Runtime directly, batches of at most 256
  padded tokens, arena off, integer matrix products; for symbols `for_code` (`OnnxEmbedder.embed_code`: texts
  cut at 128 tokens), for memories `embed_documents` (cut at 256 tokens);
- shipped, 1 core: the same with LEDGER_EMBED_THREADS=1.

CPU seconds (`time.process_time`, every thread of this process) hold up on a loaded machine; texts per wall
second do not, so the load average is printed beside them. The vectors of the ways are compared to the
first way's (smallest cosine): equal vectors mean equal search quality. The shipped vectors differ by design;
`benchmarks/code_search.py`, `retrieval.py` and `locomo.py` measure what that does to search.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import common
from code_index import RICH, index_run, log, sdist
from project_ledger.code.search import EMBED_BATCH as SYMBOL_CHUNK
from project_ledger.code.store import _SYMBOL_COLUMNS, _symbol
from project_ledger.search import onnx_edit
from project_ledger.search.bundled_model import OFFLINE_ONNX, WORD_EMBEDDINGS
from project_ledger.search.embedding import (
    DEFAULT_MODEL,
    MAX_TOKENS,
    OFFLINE_IDENTITY,
    FastEmbedEmbedder,
    OnnxEmbedder,
    _session,
    create_embedder,
    for_code,
    prepare_offline_model,
)
from project_ledger.storage.index_sync import EMBED_BATCH as MEMORY_CHUNK

CLICK = "click==8.*"
Embed = Callable[[Sequence[str]], list[np.ndarray]]
BEFORE = "before (fastembed)"
FLOAT = "float, 256 tokens"


def symbol_texts(root: Path, data_dir: Path, count: int) -> list[str]:
    if not (data_dir / "journal.sqlite3").exists():
        index_run(root, data_dir)
    db = sqlite3.connect(f"file:{data_dir / 'journal.sqlite3'}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        texts = sorted({_symbol(row).embed_text() for row in db.execute(f"SELECT {_SYMBOL_COLUMNS} FROM code_symbols")})
    finally:
        db.close()
    random.Random(0).shuffle(texts)
    return texts[:count]


def memory_texts(count: int) -> list[str]:
    texts = [m["text"] for m in json.loads((common.DATA / "recall_corpus.json").read_text())["memories"]]
    if common.LOCOMO_DEV.exists():
        for conversation in json.loads(common.LOCOMO_DEV.read_text()):
            turns = conversation["conversation"]
            for key in sorted(k for k in turns if k.startswith("session_") and isinstance(turns[k], list)):
                texts += [f"{turn['speaker']}: {turn['text']}" for turn in turns[key]]
    return texts[:count]


def before(cache: Path) -> Embed:
    """The bundled model through fastembed, as the ledger ran it before `OnnxEmbedder`."""
    embedder = FastEmbedEmbedder(DEFAULT_MODEL, OFFLINE_IDENTITY, prepare_offline_model(cache), cache, os.cpu_count() or 1)
    if not embedder.load():
        raise SystemExit(f"fastembed did not load the model: {embedder.detail}")
    return embedder.embed_documents


def float_model() -> bytes:
    """The shipped model with the two rewrites that change no output (the float session the server made before)."""
    import onnx

    model = onnx.load(str(OFFLINE_ONNX.path()))
    onnx_edit.gather_before_dequantize(model, WORD_EMBEDDINGS)
    onnx_edit.without_nan_guards(model)
    return model.SerializeToString()


def shipped(cache: Path, threads: int | None) -> tuple[Embed, Embed, Embed]:
    """What the server embeds code symbols with, and memories; and a float session as the server had before."""
    embedder = create_embedder(None, None, cache, threads)
    if not embedder.load():
        raise SystemExit(f"the embedding model did not load: {embedder.detail}")
    assert isinstance(embedder, OnnxEmbedder)
    float_session = _session(float_model(), embedder._shared)

    def floats(texts: Sequence[str]) -> list[np.ndarray]:
        return embedder._embed(texts, float_session, MAX_TOKENS)  # batched as documents were

    return for_code(embedder).embed_documents, embedder.embed_documents, floats


@dataclass
class Sample:
    seconds: float
    cpu: float
    vectors: list[np.ndarray]


def timed(embed: Embed, texts: list[str], chunk: int) -> Sample:
    started, cpu = time.perf_counter(), time.process_time()
    vectors = [v for start in range(0, len(texts), chunk) for v in embed(texts[start : start + chunk])]
    return Sample(time.perf_counter() - started, time.process_time() - cpu, vectors)


LOAD_PROBE = r"""
import os, sys, time
started, cpu = time.perf_counter(), time.process_time()
from pathlib import Path
from project_ledger.search import embedding
cache = Path(sys.argv[2])
if sys.argv[1] == "before":
    model_dir = embedding.prepare_offline_model(cache)
    embedder = embedding.FastEmbedEmbedder(embedding.DEFAULT_MODEL, embedding.OFFLINE_IDENTITY, model_dir, cache, os.cpu_count())
else:
    embedder = embedding.create_embedder(None, None, cache, None)
embedder.embed_query("where is the retry policy configured")
print(time.perf_counter() - started, time.process_time() - cpu)
"""


def load_time(way: str, cache: Path) -> tuple[float, float]:
    """Seconds (wall, CPU) from a fresh interpreter to a query's vector: imports, model load, one query."""
    done = subprocess.run([sys.executable, "-c", LOAD_PROBE, way, str(cache)], capture_output=True, text=True, check=True)
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


def same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=common.WORK)
    parser.add_argument("--texts", type=int, default=256, help="texts per set")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update the README's embedding section")
    args = parser.parse_args()
    cache = args.work / "models"
    cache.mkdir(parents=True, exist_ok=True)
    sets: dict[str, tuple[list[str], int, bool]] = {}  # texts, the chunk their caller hands over, whether code
    for requirement in (RICH, CLICK):
        root = sdist(args.work, requirement)
        if root is None:
            log(f"{requirement} skipped (download failed)")
            continue
        label = root.name.replace("-", " ", 1)
        sets[f"{label} symbols"] = (symbol_texts(root, args.work / "embedding-data" / root.name, args.texts), SYMBOL_CHUNK, True)
    sets["memories"] = (memory_texts(args.texts), MEMORY_CHUNK, False)
    fastembed = before(cache)
    code, memories, floats = shipped(cache, None)
    code_1, memories_1, _ = shipped(cache, 1)
    ways: dict[str, tuple[Embed, Embed]] = {  # symbols, memories
        BEFORE: (fastembed, fastembed),
        FLOAT: (floats, floats),
        "shipped (all cores)": (code, memories),
        "shipped (1 core)": (code_1, memories_1),
    }
    for pair in ways.values():  # warm-up
        for embed in pair:
            embed(["def warm_up(self) -> None", "a first memory"])
    loads = [common.load()]
    samples: dict[tuple[str, str], list[Sample]] = {}
    for run in range(args.runs):
        for set_name, (texts, chunk, is_code) in sets.items():
            for way, (for_symbols, for_memories) in ways.items():
                embed = for_symbols if is_code else for_memories
                sample = timed(embed, texts, chunk)
                samples.setdefault((set_name, way), []).append(sample)
                log(f"run {run + 1} {set_name} / {way}: {sample.seconds:.1f} s, {sample.cpu:.1f} CPU s, load {common.load():.2f}")
        loads.append(common.load())
    starts: dict[str, list[tuple[float, float]]] = {"before": [], "shipped": []}
    for _ in range(args.runs):
        for way, times in starts.items():
            times.append(load_time(way, cache))
    loads.append(common.load())
    rows = [
        "| texts | way | texts/s | texts per CPU s | CPU s per 100 texts | CPU ratio to before | smallest cosine to before |",
        "|---|---|---|---|---|---|---|",
    ]
    for set_name, (texts, _, _) in sets.items():
        base = statistics.median(s.cpu for s in samples[(set_name, BEFORE)])
        reference = samples[(set_name, BEFORE)][0].vectors
        for way in ways:
            runs = samples.get((set_name, way))
            if runs is None:
                continue
            seconds, cpu = statistics.median(s.seconds for s in runs), statistics.median(s.cpu for s in runs)
            cosine = min(float(np.dot(a, b)) for a, b in zip(reference, runs[0].vectors, strict=True))
            rows.append(
                f"| {set_name} ({len(texts)}) | {way} | {len(texts) / seconds:.1f} | {len(texts) / cpu:.1f} | "
                f"{100 * cpu / len(texts):.2f} | {cpu / base:.2f} | {'1 (identical)' if same(reference, runs[0].vectors) else f'{cosine:.3f}'} |"
            )
    rows += [
        "",
        "| fresh process to a query's vector (imports, model load, one query) | wall s | CPU s |",
        "|---|---|---|",
    ]
    for way, label in (("before", BEFORE), ("shipped", "shipped")):
        rows.append(
            f"| {label} | {statistics.median(t[0] for t in starts[way]):.2f} | {statistics.median(t[1] for t in starts[way]):.2f} |"
        )
    note = f"Medians of {args.runs} interleaved runs; loads read before, after each run and after the start-up runs."
    common.publish("embedding", "\n".join([*rows, "", note]), args.write, command="python benchmarks/embedding.py --write", loads=loads)


if __name__ == "__main__":
    main()
