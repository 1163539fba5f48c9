"""Train the code query model: the encoder that reads `search_code` questions, on CPU, against the shipped code model's
vectors of the symbols, which stay as they are.

    python training/finetune_queries.py W/pairs.jsonl W/neighbours.jsonl Q [--steps 600] [--lr 1e-4] [--seed 42]

The code model (`search/code_model.py`) reads both the questions and the symbols. Here a copy of it that reads the
questions alone is trained further, starting from the shipped weights (the int8 matrices times their scales), with
the symbols' vectors fixed: each is made once by the ledger's own int8 code model, exactly as an index holds it. So
the index a user already has keeps its vectors, and each question can be scored against every symbol of its
package at once instead of the 31 others of a batch: the other documented symbols and the neighbours
(`build_dataset.neighbours`, undocumented helpers, constants and overloads beside the right answer), which are what
the measured trees' questions lose to. The loss is the cross-entropy of each question over all of them.

Only the biases and layer norms are trained. They ship as floats, so the query model's int8 graph gives what the
float one does (cosine 0.9999 at the smallest); training the matrices too lost so much to quantizing them again
(median 0.983) that search through the int8 graph gained less than the float model had.

Every tenth package (by hash, as in `finetune_model.py`) is held back; every EVERY steps its questions are scored
the same way (MRR@10 among their package's symbols and neighbours) and the best checkpoint is written to
Q/encoder.pt, for `export_model.py`. Needs the training extra, and the ledger installed (for the code model).
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_model import GRAPH_PREFIX, matrix_names
from finetune_model import (
    QUERY_TOKENS,
    SCALE,
    Checkpoints,
    Encoder,
    float_model_dir,
    optimiser_step,
    read_jsonl,
    seeded,
)
from split import held_back

BATCH = 32
WARMUP = 30
EVERY = 100


def shipped_code_model() -> dict[str, torch.Tensor]:
    """The shipped code model's encoder layers as float tensors: each int8 matrix of its graph (`with_weights` adds
    the file's differences to the bundled ones) times its column scales, and the file's biases and layer norms."""
    import onnx
    from onnx import numpy_helper

    from project_ledger.search.bundled_model import shipped_graph
    from project_ledger.search.code_model import trained_weights, with_weights

    weights = trained_weights()
    graph = onnx.load_from_string(with_weights(shipped_graph(), weights)).graph
    tensors = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    out = {}
    for name, base in matrix_names(graph).items():
        out[name] = torch.from_numpy((tensors[f"{base}_q"].astype(np.float32) * tensors[f"{base}_scale"]).T.copy())
    with np.load(io.BytesIO(weights)) as trained:
        for key in trained.files:
            if key.startswith(GRAPH_PREFIX):
                out[key[len(GRAPH_PREFIX) :]] = torch.from_numpy(tensors[key].copy())
    return out


def symbol_vectors(texts: list[str], cache: Path) -> np.ndarray:
    """The vectors the ledger's int8 code model gives these symbol texts (kept in `cache`: a few minutes to make)."""
    if cache.exists():
        vectors = np.load(cache)
        if len(vectors) == len(texts):
            return vectors
    from project_ledger.search.embedding import CodeEmbedder, OnnxEmbedder

    embedder = CodeEmbedder(OnnxEmbedder(2, cache.parent / "model"), query_model=False)
    if not embedder.load():
        raise SystemExit(f"the code model did not load: {embedder.detail}")
    vectors = np.asarray([v for s in range(0, len(texts), 64) for v in embedder.embed_documents(texts[s : s + 64])])
    np.save(cache, vectors.astype(np.float32))
    return vectors


class Candidates:
    """Each package's symbols: its pairs' documents first (a pair's answer is its own row), then its neighbours."""

    def __init__(self, pairs: list[dict], neighbours: list[dict], vectors: np.ndarray) -> None:
        self.members: dict[str, list[int]] = {}  # package -> indexes of its pairs
        for i, pair in enumerate(pairs):
            self.members.setdefault(pair["package"], []).append(i)
        extra: dict[str, list[int]] = {}
        for j, symbol in enumerate(neighbours):
            extra.setdefault(symbol["package"], []).append(len(pairs) + j)
        self.rows = {p: np.asarray(m + extra.get(p, [])) for p, m in self.members.items()}
        self.position = {i: k for members in self.members.values() for k, i in enumerate(members)}
        self.vectors = torch.from_numpy(vectors)
        texts = [pair["d"] for pair in pairs]
        # Another pair of the package with the same document text is not a wrong answer.
        self.twins = {
            p: [[k for k, j in enumerate(m) if texts[j] == texts[i] and j != i] for i in m] for p, m in self.members.items()
        }

    def logits(self, package: str, questions: torch.Tensor, chosen: list[int]) -> torch.Tensor:
        logits = SCALE * questions @ self.vectors[self.rows[package]].T
        for row, i in enumerate(chosen):
            twins = self.twins[package][self.position[i]]
            if twins:
                logits[row, twins] = -1e4
        return logits


def held_back_mrr(encoder: Encoder, pairs: list[dict], candidates: Candidates, packages: list[str]) -> float:
    """MRR@10 of each held-back question among its package's symbols and neighbours."""
    encoder.model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for package in packages:
            members = candidates.members[package]
            questions = torch.cat(
                [encoder([pairs[i]["q"] for i in members[s : s + 64]], QUERY_TOKENS) for s in range(0, len(members), 64)]
            )
            scores = candidates.logits(package, questions, members)
            right = scores[torch.arange(len(members)), torch.arange(len(members))]
            ranks = (scores > right[:, None]).sum(1).numpy()
            total += float(np.where(ranks < 10, 1.0 / (ranks + 1), 0.0).sum())
            count += len(members)
    encoder.model.train()
    return total / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("neighbours", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    rng = seeded(args.seed, args.threads)
    pairs, neighbours = read_jsonl(args.pairs), read_jsonl(args.neighbours)
    args.out.mkdir(parents=True, exist_ok=True)
    texts = [pair["d"] for pair in pairs] + [symbol["d"] for symbol in neighbours]
    candidates = Candidates(pairs, neighbours, symbol_vectors(texts, args.out / "symbol_vectors.npy"))
    dev = sorted(p for p in candidates.members if held_back(p))
    train = sorted(p for p in candidates.members if not held_back(p))
    weights = [len(candidates.members[p]) for p in train]

    encoder = Encoder(float_model_dir())
    encoder.model.load_state_dict(shipped_code_model(), strict=False)
    for parameter in encoder.model.parameters():
        parameter.requires_grad = parameter.requires_grad and parameter.dim() == 1  # biases and layer norms alone
    trained = [p for p in encoder.model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / WARMUP) * max(0.0, (args.steps - step) / args.steps)
    )
    checkpoints = Checkpoints(args.out, encoder, held_back_mrr(encoder, pairs, candidates, dev))
    losses: list[float] = []
    for step in range(1, args.steps + 1):
        package = rng.choices(train, weights)[0]
        chosen = rng.sample(candidates.members[package], min(BATCH, len(candidates.members[package])))
        questions = encoder([pairs[i]["q"] for i in chosen], QUERY_TOKENS)
        target = torch.tensor([candidates.position[i] for i in chosen])
        loss = F.cross_entropy(candidates.logits(package, questions, chosen), target)
        losses.append(optimiser_step(loss, trained, optimiser, schedule))
        if step % EVERY == 0 or step == args.steps:
            checkpoints.record(step, held_back_mrr(encoder, pairs, candidates, dev), losses)
            losses = []
    checkpoints.close()


if __name__ == "__main__":
    main()
