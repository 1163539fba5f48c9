"""Disk space the embedded index allocates, against the margins it keeps before each write (`edge_index`).

    python benchmarks/index_disk.py            # about a minute; prints the table
    python benchmarks/index_disk.py --write    # also updates the README's index-disk section

The engine writes through memory maps, where a full disk is SIGBUS, so the index checks free space before each
write against a computed margin: `create_bytes` for a new shard, `write_bytes` for a batch of points (each point
counted twice: its float16 vector, 8 bytes per BM25 term, its payload, 512 bytes of overhead; plus SLACK_BYTES),
`load_bytes` for loading a shard (the holes of its payload index files, plus SLACK_BYTES). Each row below does
one operation on a real shard and reads what it allocated: the blocks of every file in the slot (`st_blocks`)
before and after, and the lowest free space of the filesystem seen by a sampler process while it ran (so a
temporary file is counted too). The margin must be at least the larger of the two on every row; the shard lives
on a tmpfs when this runs as root (as on the test machine), else in the temporary directory.

Batches: 1,024 points of 40-word memories grown to 40,960 points, then batches of short (3 words), long (400
words) and 64 KB texts; each flushed after it; the shard is closed and loaded again after each size.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import common
from project_ledger.search.edge_index import EdgeIndex, create_bytes, load_bytes, write_bytes
from project_ledger.search.index import MEMORY_PAYLOAD, IndexDoc
from project_ledger.search.sparse import SparseEncoder

DIM = 384
MB = 2**20


def allocated(folder: Path) -> int:
    return sum(path.stat().st_blocks * 512 for path in folder.rglob("*") if path.is_file())


def free_bytes(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def _sample(folder: str, lowest: Any, stop: Any) -> None:
    while not stop.is_set():
        lowest.value = min(lowest.value, free_bytes(Path(folder)))


class Meter:
    """What an operation allocates: the slot's blocks before and after, and the filesystem's lowest free space."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lowest = multiprocessing.Value("q", 1 << 62)
        self.stop = multiprocessing.Event()
        self.sampler = multiprocessing.Process(target=_sample, args=(str(folder), self.lowest, self.stop), daemon=True)
        self.sampler.start()

    def measure(self, operation: Callable[[], object]) -> tuple[int, int]:
        """(bytes allocated by the end, most bytes allocated at any moment)."""
        before, free = allocated(self.folder), free_bytes(self.folder)
        self.lowest.value = free
        time.sleep(0.01)
        operation()
        time.sleep(0.02)
        return allocated(self.folder) - before, max(free - self.lowest.value, 0)

    def close(self) -> None:
        self.stop.set()
        self.sampler.join()


@contextmanager
def scratch_disk() -> Iterator[tuple[Path, str]]:
    with tempfile.TemporaryDirectory(prefix="ledger-index-disk-") as folder:
        mountpoint = Path(folder)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", folder], capture_output=True).returncode == 0
        try:
            yield mountpoint, "a 1 GB tmpfs" if mounted else f"the temporary directory ({folder})"
        finally:
            if mounted:
                subprocess.run(["umount", folder], check=True)


def memories(
    first: int, count: int, words: int, encoder: SparseEncoder, rng: random.Random, vocabulary: list[str]
) -> list[IndexDoc]:
    return [
        IndexDoc(
            seq=seq,
            sparse=encoder.document(" ".join(rng.choice(vocabulary) for _ in range(words))),
            vector=[rng.gauss(0, 1) for _ in range(DIM)],
            kind=rng.choice(["note", "decision", "turn"]),
            tags=[f"tag{seq % 13}"],
            session=f"session-{seq // 50}",
            pinned=False,
            superseded=False,
            created=time.time(),
        )
        for seq in range(first, first + count)
    ]


Row = tuple[str, int, int, int]  # operation, allocated at the end, allocated at the peak, margin kept


def run(folder: Path) -> list[Row]:
    rng = random.Random(7)
    encoder = SparseEncoder()
    vocabulary = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10))) for _ in range(20_000)]
    meter = Meter(folder)
    index_dir = folder / "index"
    opened: list[EdgeIndex] = []

    def load() -> None:
        opened.append(EdgeIndex.open_slot(index_dir, DIM, "bench", MEMORY_PAYLOAD))

    end, peak = meter.measure(load)
    rows: list[Row] = [
        (f"create an empty shard ({len(MEMORY_PAYLOAD)} indexed payload fields)", end, peak, create_bytes(MEMORY_PAYLOAD))
    ]
    growing: list[Row] = []
    seq = 1
    for words, count in [(40, 1024)] * 40 + [(3, 1024), (400, 256), (9000, 16)]:
        index, batch = opened[-1], memories(seq, count, words, encoder, rng, vocabulary)
        seq += count

        def write(index: EdgeIndex = index, batch: list[IndexDoc] = batch, rev: int = seq) -> None:
            index.upsert(batch)
            index.set_watermark(rev)
            index._persist()  # the flush a catch-up's last watermark makes

        end, peak = meter.measure(write)
        if words == 40:
            growing.append(
                (
                    "write and flush 1,024 points of 40 words (the closest of 40 batches to 40,960 points)",
                    end,
                    peak,
                    write_bytes(batch),
                )
            )
            if len(growing) < 40:
                continue
            rows.append(min(growing, key=lambda row: row[3] / max(row[1], row[2], 1)))
        else:
            rows.append((f"write and flush {count:,} points of {words:,} words", end, peak, write_bytes(batch)))
        shard = next((index_dir / "edge-0").glob("shard-*"))
        index.close()
        needed = load_bytes(shard)
        end, peak = meter.measure(load)
        rows.append((f"load the shard again at {seq - 1:,} points", end, peak, needed))
    opened[-1].close()
    meter.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    load_before = common.load()
    with scratch_disk() as (folder, where):
        rows = run(folder)
    lines = [
        "| operation | allocated, MB | at its peak, MB | margin kept, MB | margin / most allocated |",
        "|---|---|---|---|---|",
    ]
    for label, end, peak, margin in rows:
        most = max(end, peak)
        ratio = f"{margin / most:.1f}×" if most >= MB // 10 else "(under 0.1 MB allocated)"
        lines.append(f"| {label} | {max(end, 0) / MB:.2f} | {peak / MB:.2f} | {margin / MB:.2f} | {ratio} |")
    body = "\n".join(lines) + f"\n\nOn {where}."
    common.publish("index-disk", body, args.write, command="python benchmarks/index_disk.py", loads=[load_before, common.load()])
    short = [label for label, end, peak, margin in rows if margin < max(end, peak)]
    if short:
        raise SystemExit(f"a margin is short of what the engine allocated: {', '.join(short)}")


if __name__ == "__main__":
    main()
