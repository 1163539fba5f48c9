"""The shipped model's vectors for the training pairs and for code search's measured trees, kept on disk.

    python training/vectors.py pairs PAIRS.jsonl OUT_DIR      # q.npy, d.npy (float32, row i: line i of PAIRS)
    python training/vectors.py pairs PAIRS.jsonl OUT_DIR d 1/2 # the second half of the symbols alone: d.1.npy
    python training/vectors.py join OUT_DIR d 2                # d.0.npy and d.1.npy as d.npy
    python training/vectors.py measured BENCH_WORK OUT_DIR     # measured.npz: each tree's symbols and questions

A query vector is what `search_code` asks with (`OnnxEmbedder.embed_query`, texts cut at 256 tokens); a symbol's
vector is what the code index stores (`OnnxEmbedder.embed_code`, cut at 128). The adapter (train_adapter.py) is
trained on exactly these, so it maps what it will be handed at run time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from project_ledger.search.embedding import OnnxEmbedder

CHUNK = 512


def runtime(threads: int = 1) -> OnnxEmbedder:
    model = OnnxEmbedder(threads)
    if not model.load():
        raise SystemExit(f"the bundled model did not load: {model.detail}")
    return model


def embed(texts: list[str], run, label: str) -> np.ndarray:
    out = np.zeros((len(texts), 384), dtype=np.float32)
    started = time.monotonic()
    for start in range(0, len(texts), CHUNK):
        out[start : start + CHUNK] = np.stack(run(texts[start : start + CHUNK]))
        print(f"{label}: {min(start + CHUNK, len(texts))}/{len(texts)} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return out


def pairs(path: Path, out: Path, sides: str = "qd", part: str = "0/1") -> None:
    """Either side alone (`sides`: "q" or "d"), and one part of the pairs ("1/2": the second half), to run them in
    several processes; `join` puts the parts together."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    index, parts = (int(x) for x in part.split("/"))
    size = -(-len(rows) // parts)
    rows = rows[index * size : (index + 1) * size]
    suffix = "" if parts == 1 else f".{index}"
    model = runtime()
    out.mkdir(parents=True, exist_ok=True)
    if "d" in sides:
        np.save(out / f"d{suffix}.npy", embed([r["d"] for r in rows], model.embed_code, f"symbols{suffix}"))
    if "q" in sides:
        np.save(out / f"q{suffix}.npy", embed([r["q"] for r in rows], model.embed_documents, f"questions{suffix}"))


def join(out: Path, side: str, parts: str) -> None:
    np.save(out / f"{side}.npy", np.concatenate([np.load(out / f"{side}.{i}.npy") for i in range(int(parts))]))


def measured(work: Path, out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from measured import trees

    model = runtime()
    arrays: dict[str, np.ndarray] = {}
    for tree in trees(work):
        name = tree.label.split()[0]
        arrays[f"{name}.d"] = embed(tree.texts, model.embed_code, name)
        arrays[f"{name}.q"] = embed(tree.questions, model.embed_documents, name)
        # Each question's answers as a 0/1 row over the symbols (few symbols: small).
        answers = np.zeros((len(tree.questions), len(tree.texts)), dtype=bool)
        for i, found in enumerate(tree.answers):
            answers[i, list(found)] = True
        arrays[f"{name}.answers"] = answers
        arrays[f"{name}.tests"] = np.asarray(tree.tests)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "measured.npz", **arrays)


if __name__ == "__main__":
    if sys.argv[1] == "join":  # join OUT_DIR d 2
        join(Path(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "pairs":  # pairs PAIRS OUT_DIR [q|d] [i/n]
        pairs(Path(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:6])
    else:
        measured(Path(sys.argv[2]), Path(sys.argv[3]))
