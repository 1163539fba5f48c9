"""One process at a time: the lock the index slots, the hook socket and the shared server take."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from project_ledger.file_lock import FileLock

pytestmark = pytest.mark.skipif(os.name == "nt", reason="flock semantics")


def test_a_held_lock_is_refused_until_it_is_released(tmp_path: Path) -> None:
    path = tmp_path / "slot.lock"
    held = FileLock.try_acquire(path)
    assert held is not None
    assert FileLock.try_acquire(path) is None
    assert FileLock.acquire_within(path, 0.2, poll=0.05) is None
    assert FileLock.is_held(path)
    held.release()
    assert not FileLock.is_held(path)
    again = FileLock.try_acquire(path)
    assert again is not None
    again.release()


def test_the_holder_records_itself_in_the_file_and_the_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "owner.lock"
    lock = FileLock.acquire(path)
    lock.record("123456")
    lock.record("42")  # replaces, never appends
    assert path.read_text() == "42"
    assert path.stat().st_mode & 0o777 == 0o600
    lock.release()
    with pytest.raises(OSError, match="not locked"):
        lock.record("7")


def test_a_process_that_dies_lets_go_of_its_lock(tmp_path: Path) -> None:
    path = tmp_path / "dead.lock"
    code = (
        "import time; from pathlib import Path; from project_ledger.file_lock import FileLock; "
        f"FileLock.acquire(Path({str(path)!r})); print('held', flush=True); time.sleep(60)"
    )
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "held"
            assert FileLock.is_held(path)
        finally:
            child.kill()
    lock = FileLock.acquire_within(path, 5.0)
    assert lock is not None
    lock.release()
