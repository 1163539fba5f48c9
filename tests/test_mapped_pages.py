"""The embedded index hands the pages of its files back (`process_memory.release_mapped_pages`): what loading a shard
read whole and never reads again, and what a catch-up wrote, stop counting in the server's resident memory, and
every point and payload index still answers as before."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
import qdrant_edge

from project_ledger.search import edge_index
from project_ledger.search.edge_index import EdgeIndex
from project_ledger.search.index import MEMORY_PAYLOAD, IndexDoc, Match
from project_ledger.search.sparse import SparseEncoder

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
DIM = 384
POINTS = 1_200


def resident_mb(folder: Path) -> float:
    """This process's resident pages of files mapped under `folder`."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            inside = len(fields) == 6 and fields[5].startswith(f"{folder}/")
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total / 1024


def docs(first: int, count: int, kind: str) -> list[IndexDoc]:
    rng, encoder = random.Random(first), SparseEncoder()
    return [
        IndexDoc(
            seq=seq,
            sparse=encoder.document(f"memory {seq} about the {kind} export"),
            vector=[rng.uniform(-1, 1) for _ in range(DIM)],
            kind=kind,
            tags=[f"t{seq % 7}"],
            session=f"s{seq % 3}",
            pinned=False,
            superseded=seq % 10 == 5,
            created=float(seq),
        )
        for seq in range(first, first + count)
    ]


def open_index(index_dir: Path) -> EdgeIndex:
    return EdgeIndex.open_slot(index_dir, DIM, "model@test", MEMORY_PAYLOAD)


def decisions(index: EdgeIndex) -> int:
    where = [Match("kind", ("decision",)), Match("superseded", (0,)), Match("created", at_least=1.0)]
    found = index.candidates([0.5] * DIM, SparseEncoder().query("decision export"), where, 10_000)
    return len({hit.seq for hit in found.dense} | {hit.seq for hit in found.sparse})


def test_a_reopened_shard_keeps_none_of_what_loading_read_and_its_indexes_still_filter(tmp_path: Path) -> None:
    index = open_index(tmp_path)
    index.upsert(docs(1, POINTS, "decision"))
    index.set_watermark(POINTS)
    index.close()
    loaded = qdrant_edge.EdgeShard.load(str(next((tmp_path / "edge-0").glob("shard-*"))))
    read_whole = resident_mb(tmp_path)
    loaded.close()

    index = open_index(tmp_path)
    try:
        assert read_whole >= 10, "the engine no longer reads its payload indexes whole: the release may be moot"
        assert resident_mb(tmp_path) < 1
        assert decisions(index) == POINTS - POINTS // 10
        index.upsert(docs(POINTS + 1, 100, "decision"))
        index.delete([1, 2])
        index.set_watermark(POINTS + 100)
    finally:
        index.close()
    index = open_index(tmp_path)
    try:
        assert index.count() == POINTS + 98
        assert decisions(index) == POINTS + 100 - (POINTS + 100) // 10 - 2
    finally:
        index.close()


def test_a_flush_after_many_points_hands_their_written_pages_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edge_index, "PERSIST_SECONDS", 0.0)  # each watermark flushes, as a catch-up's last does
    index = open_index(tmp_path)
    try:
        index.upsert(docs(1, edge_index.RELEASE_AFTER_POINTS - 1, "note"))
        index.set_watermark(1)
        written = resident_mb(tmp_path)
        index.upsert(docs(edge_index.RELEASE_AFTER_POINTS, 1, "decision"))
        index.set_watermark(2)
        assert written >= 1, "too few pages written to tell"
        assert resident_mb(tmp_path) < written / 4
        assert decisions(index) == 1
    finally:
        index.close()
