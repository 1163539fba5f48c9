"""What a running file watcher is doing, for the other processes on the project (`doctor` above all).

`doctor` runs in a process of its own and cannot ask a server's watcher whether it keeps up. So a watcher that
follows the tree (`serve`'s, or `index --watch`'s) holds a lock on `<data dir>/watcher.lock` for as long as it runs,
and writes its state into that file at each change (`FileLock.record`). The lock goes with the process however it
ends: a file whose lock is free is left over from a process that is gone, and says nothing. Only one watcher on a
project publishes; a second one takes over when the first has gone (it tries again at each change of its state).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from project_ledger.file_lock import FileLock

WATCH_STATE_NAME = "watcher.lock"
FIRST_CLAIM_SECONDS = 0.2  # a reader takes the lock for a moment to see whether it is free; a watcher starting waits that out
READ_TRIES = 5  # a reader that catches the file between its truncation and its new text reads again


@dataclass(frozen=True)
class WatchReport:
    pid: int | None  # None when the file could not be read
    state: str  # "running", or "rescanning" after the watcher dropped events
    rescans: int  # since the watcher started
    rescan: str | None  # the latest rescan, under way or done, in the words `status` uses


class WatchPublisher:
    """The watcher's side: holds the lock while it runs and records each state."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: FileLock | None = None
        self._claimed = False

    def publish(self, state: str, rescans: int, rescan: str | None) -> None:
        if self._lock is None:
            wait = 0.0 if self._claimed else FIRST_CLAIM_SECONDS
            self._claimed = True
            self._lock = FileLock.acquire_within(self.path, wait)
            if self._lock is None:  # another watcher on this project publishes
                return
        self._lock.record(json.dumps(asdict(WatchReport(os.getpid(), state, rescans, rescan))))

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def read_watch_state(path: Path) -> WatchReport | None:
    """The state of the watcher that holds `path`, or None when no running process holds it."""
    if not path.exists() or not FileLock.is_held(path):
        return None
    for _ in range(READ_TRIES):
        try:
            return WatchReport(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            time.sleep(0.01)
    return WatchReport(pid=None, state="running", rescans=0, rescan=None)  # held, but its text could not be read
