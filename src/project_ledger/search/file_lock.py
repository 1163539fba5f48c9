"""An exclusive lock on a file, held for as long as the process wants it."""

from __future__ import annotations

import os
from pathlib import Path

if os.name == "nt":
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


class FileLock:
    """Released by `release()` or when the process exits, however it exits."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def try_acquire(cls, path: Path) -> FileLock | None:
        """The lock if it is free now, else None."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if _lock(fd, wait=False):
            return cls(fd, path)
        os.close(fd)
        return None

    @classmethod
    def acquire(cls, path: Path) -> FileLock:
        """The lock, waiting for it as long as it takes."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _lock(fd, wait=True):
            os.close(fd)
            raise OSError(f"could not lock {path}")
        return cls(fd, path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None
