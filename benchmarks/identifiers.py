"""Exact identifiers among look-alikes: does the memory holding the identifier a query names come first?

    python benchmarks/identifiers.py            # prints the table
    python benchmarks/identifiers.py --write    # also updates the README's section

About 1,200 notes are stored through the real service, each holding one generated identifier in one of
twelve shapes (ticket keys, versions, hex ids, error codes, snake_case, camelCase, dotted paths, CONSTANTS,
command-line flags, file paths, short hashes, mixed tokens), in sentences that are alike on purpose, and the
identifiers of one shape look alike too (same prefixes, digits a swap apart). Then, for a sample of them,
`recall` is asked for the identifier bare and inside a question. Reported: how often the memory holding it is
first, and in the top 3.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import common
from locomo import open_bench_ledger

PER_SHAPE = 100
ASKED_PER_SHAPE = 12
SEED = 16


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


WORDS = ["quota", "retry", "invoice", "ledger", "session", "webhook", "billing", "tenant", "refund", "export", "cache", "queue"]


def _pick(rng: random.Random, k: int) -> list[str]:
    return rng.sample(WORDS, k)


SHAPES: dict[str, Callable[[random.Random], str]] = {
    "ticket key": lambda r: f"{r.choice(['OPS', 'BILL', 'INC'])}-{r.choice(['94', '49'])}{_digits(r, 3)}",
    "version": lambda r: f"v{r.randint(4, 5)}.{r.randint(30, 32)}.{_digits(r, 3)}",
    "hex id": lambda r: f"0x9f{_hex(r, 6)}",
    "error code": lambda r: f"ERR_{r.choice(['QUOTA', 'RETRY', 'TENANT'])}_{r.randint(4000, 4299)}",
    "snake_case": lambda r: "_".join(_pick(r, 3)) + f"_{r.randint(1, 9)}",
    "camelCase": lambda r: (lambda w: w[0] + "".join(x.title() for x in w[1:]))(_pick(r, 3)) + str(r.randint(1, 9)),
    "dotted path": lambda r: ".".join(_pick(r, 3)) + f".v{r.randint(1, 9)}",
    "CONSTANT": lambda r: "_".join(w.upper() for w in _pick(r, 2)) + f"_LIMIT_{r.randint(10, 99)}",
    "flag": lambda r: "--" + "-".join(_pick(r, 2)) + f"-{r.choice(['mode', 'level', 'window'])}",
    "file path": lambda r: "src/" + "/".join(_pick(r, 2)) + f"/{r.choice(WORDS)}_handler{r.randint(1, 99)}.py",
    "short hash": lambda r: _hex(r, 7),
    "mixed token": lambda r: f"mc{_hex(r, 5)}p{r.randint(1, 9)}n{_digits(r, 4)}x",
}

SENTENCES = [
    "The {id} setting was raised after the incident on the billing workers last week.",
    "We traced the failed nightly export to {id} and rolled the change back.",
    "Keep {id} as it is: the retry queue depends on it for tenant refunds.",
    "The on-call note says {id} showed up in the logs before the quota alarms fired.",
    "After the cache change, {id} is what the invoice job reads at startup.",
]
QUESTIONS = [
    "what do we know about {id}?",
    "why did {id} come up during the incident?",
    "is {id} still used by the billing jobs?",
]


def corpus(seed: int = SEED) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(shape, identifier, note text) for every note, and (shape, identifier, query) for those asked about."""
    rng = random.Random(seed)
    notes: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for shape, make in SHAPES.items():
        made = 0
        while made < PER_SHAPE:
            identifier = make(rng)
            if identifier.lower() in seen:
                continue
            seen.add(identifier.lower())
            notes.append((shape, identifier, rng.choice(SENTENCES).format(id=identifier)))
            made += 1
    queries = []
    for shape in SHAPES:
        mine = [note for note in notes if note[0] == shape]
        for _, identifier, _ in rng.sample(mine, ASKED_PER_SHAPE):
            queries.append((shape, identifier, identifier))
            queries.append((shape, identifier, rng.choice(QUESTIONS).format(id=identifier)))
    return notes, queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    notes, queries = corpus()
    loads = [common.load()]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = open_bench_ledger(Path(tmp))
        stored = {identifier: ledger.remember(text, kind="note") for _, identifier, text in notes}
        id_of = {identifier: result.id for identifier, result in stored.items()}
        merged = sum(not result.created for result in stored.values())  # taken for a near-duplicate of another note
        while ledger.sync.embed_missing(256):
            pass
        ledger.sync.catch_up()
        places: dict[str, list[int | None]] = {}
        for shape, identifier, query in queries:
            found = [hit.id for hit in ledger.recall(query, k=10).results]
            form = "bare" if query == identifier else "in a question"
            places.setdefault(shape, []).append(found.index(id_of[identifier]) if id_of[identifier] in found else None)
            places.setdefault(form, []).append(places[shape][-1])
        ledger.close()
    seconds = time.perf_counter() - started

    def share(found: list[int | None], k: int) -> float:
        return statistics.fmean(place is not None and place < k for place in found)

    every = [place for shape in SHAPES for place in places[shape]]
    lines = ["| queries | n | top 1 | top 3 |", "|---|---|---|---|"]
    for name in [*SHAPES, "bare", "in a question"]:
        lines.append(f"| {name} | {len(places[name])} | {share(places[name], 1):.3f} | {share(places[name], 3):.3f} |")
    lines.append(f"| **all** | {len(every)} | {share(every, 1):.3f} | {share(every, 3):.3f} |")
    text = "\n".join(
        [
            f"{len(notes)} look-alike notes, {len(SHAPES)} identifier shapes ({merged} merged into another as a near-duplicate "
            f"when stored); {len(queries)} recalls naming one identifier (half bare, half inside a question), through "
            "`recall` with its defaults.",
            "",
            *lines,
            "",
            f"{seconds / 60:.1f} min.",
        ]
    )
    common.publish("identifiers", text, args.write, command="python benchmarks/identifiers.py", loads=[*loads, common.load()])


if __name__ == "__main__":
    main()
