"""What `status` reads of the embedded index's slots without opening one (`EdgeIndex.read_slot`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from project_ledger.file_lock import FileLock
from project_ledger.search.edge_index import EdgeIndex
from project_ledger.search.index import IndexState

pytestmark = pytest.mark.skipif(os.name == "nt", reason="flock semantics")
MODEL = "model@test"


def written_slot(index_dir: Path, n: int, *, epoch: int, watermark: int) -> None:
    slot = index_dir / f"edge-{n}"
    (slot / "shard-a").mkdir(parents=True)
    IndexState(slot / "state.json", MODEL, epoch=epoch, watermark=watermark, shard="shard-a", points=5).save()


def test_of_held_slots_the_newest_epoch_wins_over_a_higher_revision_of_the_one_before(tmp_path: Path) -> None:
    written_slot(tmp_path, 0, epoch=1, watermark=900)  # left over from before a rebuild
    written_slot(tmp_path, 1, epoch=2, watermark=0)  # a server rebuilding in the new epoch
    locks = [FileLock.acquire(tmp_path / f"edge-{n}.lock") for n in (0, 1)]
    try:
        state = EdgeIndex.read_slot(tmp_path, MODEL)
    finally:
        for lock in locks:
            lock.release()
    assert state is not None and (state.epoch, state.watermark) == (2, 0)
    assert state.location == str(tmp_path / "edge-1")


def test_a_free_slot_that_can_tell_is_read_and_no_lock_file_is_made_for_a_slot_never_written(tmp_path: Path) -> None:
    written_slot(tmp_path, 1, epoch=3, watermark=40)
    state = EdgeIndex.read_slot(tmp_path, MODEL)
    assert state is not None and (state.epoch, state.watermark, state.points) == (3, 40, 5)
    assert not (tmp_path / "edge-0.lock").exists()
    assert EdgeIndex.read_slot(tmp_path, "another-model") is None
