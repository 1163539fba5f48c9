"""Train the code-search adapter: linear maps on the shipped model's vectors, learned from (question, symbol) pairs.

    python training/train_adapter.py VEC_DIR PAIRS.jsonl MEASURED.npz OUT.npz [--side query|both] [--seed 33]

A question's vector q and a symbol's vector d (training/vectors.py) are scored as cos(Q q, D d), with Q and D
384 x 384 matrices that start as the identity (the shipped model's own cosine). They are trained with in-batch
negatives (InfoNCE, both directions): each batch is drawn from one package, so the other symbols of a batch are
code of the same library, the harder negatives. A penalty on the distance from the identity keeps what the model
already knew. `--side query` trains Q alone (D stays the identity: stored symbol vectors keep their meaning).

Pairs are split by package (every 10th package, by hash, held back) to choose the number of epochs; the measured
trees are only scored, never trained on, and the scores printed are the dense list alone (all the tree's symbols
ranked by cosine), an offline proxy: the figures that count come from benchmarks/code_search.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

BATCH = 256
TEMPERATURE = 0.05
LEARNING_RATE = 1e-3
IDENTITY_PENALTY = 0.1
MAX_EPOCHS = 12


def unit(x: jnp.ndarray) -> jnp.ndarray:
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def apply(params: dict[str, jnp.ndarray], q: jnp.ndarray, d: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    eye = jnp.eye(q.shape[-1])
    qs = unit(q @ (eye + params["q"]).T)
    ds = unit(d @ (eye + params["d"]).T) if "d" in params else d
    return qs, ds


def loss(params: dict[str, jnp.ndarray], q: jnp.ndarray, d: jnp.ndarray, penalty_weight: float) -> jnp.ndarray:
    qs, ds = apply(params, q, d)
    logits = qs @ ds.T / TEMPERATURE
    labels = jnp.arange(q.shape[0])
    forward = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    backward = optax.softmax_cross_entropy_with_integer_labels(logits.T, labels).mean()
    penalty = sum(jnp.sum(p**2) for p in params.values())
    return (forward + backward) / 2 + penalty_weight * penalty


def batches(packages: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Index batches of BATCH pairs, each from one package (a package's last short batch is dropped)."""
    out = []
    for name in np.unique(packages):
        members = rng.permutation(np.flatnonzero(packages == name))
        out += [members[i : i + BATCH] for i in range(0, len(members) - BATCH // 4 + 1, BATCH) if len(members[i : i + BATCH]) >= BATCH // 4]
    return [out[i] for i in rng.permutation(len(out))]


def mrr_at_10(qs: np.ndarray, ds: np.ndarray, answers: np.ndarray) -> float:
    scores = qs @ ds.T
    top = np.argsort(-scores, axis=1)[:, :10]
    hit = np.take_along_axis(answers, top, axis=1)
    ranks = np.where(hit.any(1), 1.0 / (hit.argmax(1) + 1), 0.0)
    return float(ranks.mean())


def measured_scores(params: dict[str, jnp.ndarray] | None, measured: dict[str, np.ndarray]) -> dict[str, float]:
    out = {}
    for name in sorted({k.split(".")[0] for k in measured}):
        q, d = measured[f"{name}.q"], measured[f"{name}.d"]
        if params is not None:
            q, d = (np.asarray(x) for x in apply(params, jnp.asarray(q), jnp.asarray(d)))
        out[name] = round(mrr_at_10(q, d, measured[f"{name}.answers"]), 3)
    return out


def held_back(package: str) -> bool:
    return int(hashlib.sha256(package.encode()).hexdigest(), 16) % 10 == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("vectors", type=Path)
    parser.add_argument("pairs", type=Path)
    parser.add_argument("measured", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--side", choices=("query", "both"), default="both")
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--lr", type=float, default=LEARNING_RATE)
    parser.add_argument("--penalty", type=float, default=IDENTITY_PENALTY, help="weight of the squared distance from the identity")
    parser.add_argument("--epochs", type=int, default=0, help="train this many epochs on every pair (0: choose on the held-back packages)")
    args = parser.parse_args()
    started = time.monotonic()
    q_all, d_all = np.load(args.vectors / "q.npy"), np.load(args.vectors / "d.npy")
    packages = np.asarray([json.loads(line)["package"] for line in args.pairs.read_text(encoding="utf-8").splitlines()])
    measured = dict(np.load(args.measured))
    print("shipped model:", measured_scores(None, measured), file=sys.stderr)
    dev = np.asarray([held_back(p) for p in packages])
    rng = np.random.default_rng(args.seed)
    train_idx = np.flatnonzero(~dev) if args.epochs == 0 else np.arange(len(packages))
    zeros = jnp.zeros((384, 384), dtype=jnp.float32)
    params = {"q": zeros} if args.side == "query" else {"q": zeros, "d": zeros}
    optimiser = optax.adamw(args.lr, weight_decay=0.0)
    state = optimiser.init(params)
    step = jax.jit(lambda p, s, q, d: _step(p, s, q, d, optimiser, args.penalty))
    dev_loss = jax.jit(lambda p, q, d: loss(p, q, d, 0.0))  # the ranking loss alone
    best, best_epoch, history = float("inf"), 0, []
    for epoch in range(1, (args.epochs or MAX_EPOCHS) + 1):
        for batch in batches(packages[train_idx], rng):
            rows = train_idx[batch]
            params, state, _ = step(params, state, jnp.asarray(q_all[rows]), jnp.asarray(d_all[rows]))
        scores = measured_scores(params, measured)
        line = {"epoch": epoch, "measured (not chosen on)": scores}
        if args.epochs == 0:
            dev_batches = batches(packages[dev], np.random.default_rng(0))
            dev_rows = np.flatnonzero(dev)
            value = float(np.mean([dev_loss(params, jnp.asarray(q_all[dev_rows[b]]), jnp.asarray(d_all[dev_rows[b]])) for b in dev_batches]))
            line["held-back loss"] = round(value, 4)
            if value < best:
                best, best_epoch = value, epoch
        history.append(line)
        print(json.dumps(line), file=sys.stderr, flush=True)
    if args.epochs == 0:
        print(f"best epoch on the held-back packages: {best_epoch}; train again with --epochs {best_epoch}", file=sys.stderr)
        return
    eye = np.eye(384, dtype=np.float32)
    matrices = {k: eye + np.asarray(v) for k, v in params.items()}
    matrices.setdefault("d", eye)
    # Shipped as float16 (half the bytes); the scores of the rounded maps are printed beside the float ones.
    shipped = {k: v.astype(np.float16) for k, v in matrices.items()}
    np.savez(args.out, **shipped)
    rounded = {k: jnp.asarray(v.astype(np.float32)) - jnp.eye(384) for k, v in shipped.items()}
    print(f"float32 maps: {measured_scores(params, measured)}; float16 maps: {measured_scores(rounded, measured)}", file=sys.stderr)
    symbols = jnp.asarray(np.concatenate([v for k, v in measured.items() if k.endswith(".d")]))
    questions = jnp.asarray(np.concatenate([v for k, v in measured.items() if k.endswith(".q")]))
    full_q, full_d = apply(params, questions, symbols)
    half_q, half_d = apply(rounded, questions, symbols)
    cosines = {"questions": float(jnp.min(jnp.sum(full_q * half_q, -1))), "symbols": float(jnp.min(jnp.sum(full_d * half_d, -1)))}
    print(f"smallest cosine, float16 maps to float32, measured trees' vectors: {cosines}", file=sys.stderr)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} (sha256 {digest}) in {time.monotonic() - started:.0f} s", file=sys.stderr)


def _step(params, state, q, d, optimiser, penalty_weight):  # type: ignore[no-untyped-def]
    value, grads = jax.value_and_grad(loss)(params, q, d, penalty_weight)
    updates, state = optimiser.update(grads, state, params)
    return optax.apply_updates(params, updates), state, value


if __name__ == "__main__":
    main()
