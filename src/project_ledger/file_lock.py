"""An exclusive lock on a file, held for as long as the process wants it.

Index slots, the hook socket and the shared server all say "one process at a time" this way: the lock goes
with the descriptor, so a process that dies, however it dies, lets go of it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

if sys.platform == "win32":  # the same test as os.name == "nt", in the form type checkers read
    import msvcrt

    def _lock(fd: int, wait: bool) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

else:
    import fcntl

    def _lock(fd: int, wait: bool) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


class FileLock:
    """Released by `release()` or when the process exits, however it exits."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def try_acquire(cls, path: Path) -> FileLock | None:
        """The lock if it is free now, else None."""
        return cls.acquire_within(path, 0.0)

    @classmethod
    def acquire_within(cls, path: Path, seconds: float, poll: float = 0.05) -> FileLock | None:
        """The lock if it comes free within `seconds` (asked every `poll` seconds), else None."""
        fd = _open(path)
        deadline = time.monotonic() + seconds
        while not _lock(fd, wait=False):
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(poll)
        return cls(fd, path)

    @classmethod
    def acquire(cls, path: Path) -> FileLock:
        """The lock, waiting for it as long as it takes."""
        fd = _open(path)
        if not _lock(fd, wait=True):
            os.close(fd)
            raise OSError(f"could not lock {path}")
        return cls(fd, path)

    @classmethod
    def is_held(cls, path: Path) -> bool:
        """Whether another process holds the lock now (taken and let go at once if it is free)."""
        lock = cls.try_acquire(path)
        if lock is None:
            return True
        lock.release()
        return False

    def record(self, text: str) -> None:
        """Write `text` into the lock file, in place of what it held: who holds the lock, for the reader."""
        if self._fd is None:
            raise OSError(f"{self.path} is not locked")
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text.encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None
