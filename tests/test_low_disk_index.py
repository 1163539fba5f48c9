"""The embedded index on a disk without room: the margins it keeps cover what the engine really allocates, and
without them it is held in memory, answers as the shard would, and is written back once there is room.

The disks are real: a small tmpfs each test mounts (see `test_storage_faults.py`), so that the engine's own
allocation is what is measured and what runs out.
"""

from __future__ import annotations

import random
from pathlib import Path

from project_ledger.search.edge_index import EdgeIndex, create_bytes, load_bytes, write_bytes
from project_ledger.search.index import MEMORY_PAYLOAD, Candidates, IndexDoc, Match
from project_ledger.search.ram_index import RamIndex
from project_ledger.search.sparse import SparseEncoder

from .test_mapped_pages import open_index
from .test_storage_faults import fill, leave_free, tmpfs

DIM = 384
WORDS = "invoice export retry queue billing deploy staging database cluster cache token session port worker".split()


def docs(first: int, count: int, words: int = 20, seed: int = 0) -> list[IndexDoc]:
    rng, encoder = random.Random(first * 1000 + seed), SparseEncoder()
    return [
        IndexDoc(
            seq=seq,
            sparse=encoder.document(
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(words // 2 + 1, words))) + f" item{seq}"
            ),
            vector=[rng.uniform(-1, 1) for _ in range(DIM)],
            kind=("note", "decision", "turn")[seq % 3],
            tags=[f"t{seq % 4}"],
            session=f"s{seq % 5}",
            pinned=False,
            superseded=seq % 10 == 5,
            created=float(seq),
        )
        for seq in range(first, first + count)
    ]


def allocated(folder: Path) -> int:
    return sum(path.stat().st_blocks * 512 for path in folder.rglob("*") if path.is_file())


QUERIES = [
    ("billing export retry", [0.3] * DIM, []),
    ("staging database item17", [-0.2] * DIM, [Match("kind", ("decision", "turn")), Match("superseded", (0,))]),
    ("cache token", [0.1, -0.1] * (DIM // 2), [Match("tags", ("t1", "t2")), Match("created", at_least=20.0, at_most=180.0)]),
]


def answers(index: EdgeIndex | RamIndex) -> list[Candidates]:
    encoder = SparseEncoder()
    return [index.candidates(dense, encoder.query(text), where, 15) for text, dense, where in QUERIES]


def close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-3 * max(1.0, abs(b))


def same_order(found: Candidates, expected: Candidates) -> None:
    """The same points with the same scores (but for rounding) in the same order, but for the order within a run of
    equal scores, and for which of the points tied with the last one made the cut."""
    for got, want in ((found.sparse, expected.sparse), (found.dense, expected.dense)):
        assert len(got) == len(want)
        assert all(close(a.score, b.score) for a, b in zip(got, want, strict=True))
        start = 0
        for end in range(1, len(want)):
            if not close(want[end].score, want[end - 1].score):
                assert {hit.seq for hit in got[start:end]} == {hit.seq for hit in want[start:end]}
                start = end


def test_held_in_memory_the_points_are_ranked_as_the_shard_ranks_them(tmp_path: Path) -> None:
    index, ram = open_index(tmp_path), RamIndex()
    try:
        corpus = docs(1, 300)
        index.upsert(corpus)
        ram.upsert(corpus)
        for found, expected in zip(answers(ram), answers(index), strict=True):
            assert expected.sparse and expected.dense
            same_order(found, expected)
    finally:
        index.close()


def test_the_margins_cover_what_the_engine_allocates_to_create_write_and_load_a_shard(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "256m") as disk:
        index_dir = disk / "index"
        index = open_index(index_dir)
        assert allocated(index_dir) <= create_bytes(MEMORY_PAYLOAD)
        seq = 1
        for words, count in ((3, 1000), (40, 1000), (400, 200), (9000, 16)):  # short notes to 64 KB texts
            batch = docs(seq, count, words)
            before = allocated(index_dir)
            index.upsert(batch)
            index.set_watermark(seq)
            index.close()  # the flush is counted too
            assert 0 < allocated(index_dir) - before <= write_bytes(batch), words
            seq += count
            shard = next((index_dir / "edge-0").glob("shard-*"))
            before, needed = allocated(index_dir), load_bytes(shard)
            index = open_index(index_dir)
            assert allocated(index_dir) - before <= needed
        index.close()


def test_without_room_the_index_is_held_in_memory_answers_the_same_and_is_written_back(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "64m") as disk:
        index_dir = disk / "index"
        index = open_index(index_dir)
        corpus, late = docs(1, 400), docs(401, 50)
        index.upsert(corpus)
        index.set_watermark(400)
        before = answers(index)
        filler = fill(disk)
        leave_free(filler, 2**20)  # room for a journal, not for the index's next write

        index.upsert(late)
        index.delete([3, 4])
        index.set_watermark(451)
        assert index.held_in_memory and any("index held in memory" in event for event in index.events)
        assert index.watermark() == 451 and index.count() == 448
        held = answers(index)
        index.delete([doc.seq for doc in late])
        index.upsert(corpus[2:4])
        for found, expected in zip(answers(index), before, strict=True):  # back to the shard's points, ranked as it did
            same_order(found, expected)

        index.upsert(late)
        index.delete([3, 4])
        filler.unlink()
        index.close()  # written back: there is room now
        index = open_index(index_dir)
        try:
            assert not index.held_in_memory and index.watermark() == 451 and index.count() == 448
            for found, expected in zip(answers(index), held, strict=True):
                same_order(found, expected)
        finally:
            index.close()


def test_a_shard_with_no_room_to_load_is_held_empty_from_revision_zero_and_rebuilt_on_disk_later(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "64m") as disk:
        index_dir = disk / "index"
        index = open_index(index_dir)
        index.upsert(docs(1, 100))
        index.set_watermark(100)
        index.close()
        filler = fill(disk)

        index = open_index(index_dir)  # loading would allocate the payload indexes' holes: no room for that
        assert index.held_in_memory and index.watermark() == 0 and index.count() == 0
        index.upsert(docs(1, 100))  # as catching up from the journal refills it
        index.set_watermark(100)
        assert index.count() == 100
        filler.unlink()
        index.close()
        index = open_index(index_dir)
        try:
            assert not index.held_in_memory and index.watermark() == 100 and index.count() == 100
        finally:
            index.close()
