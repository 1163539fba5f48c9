"""The watchdog observer the code watcher runs: on Linux an inotify observer that also says when the kernel dropped events.

A process that reads its inotify events too slowly (a `git checkout` of thousands of files writes them faster than
that) loses what no longer fits in the kernel's queue (`fs.inotify.max_queued_events`, 16,384 by default); the
kernel queues one IN_Q_OVERFLOW event in their place. watchdog (7.1 and later) handles that event inside its
`InotifyFD`: it calls `on_queue_overflow()` on every callback registered on one of its watches (its own watch groups
rebuild their watches there) and logs a warning, but no event handler hears of it. So the observer here runs on an
`InotifyFD` of its own, as watchdog's `InotifyObserver` does on a private one, and registers one more callback on
the root's watch that only listens for the overflow. It adds nothing to that watch's event mask (`IN_MASK_ADD` of a
flag the watch has already): a second `inotify_add_watch` on a path would otherwise replace its mask.

The events asked for are those that change what is indexed (created, deleted, modified, moved, closed after a
write), not opens and closes after reading: every read of a source file (a grep of the tree, the indexer's own
reads) would otherwise put two more events in the same queue.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
)
from watchdog.observers.api import DEFAULT_OBSERVER_TIMEOUT, BaseObserver
from watchdog.utils import UnsupportedLibcError, platform

# The events the watcher acts on (a directory's own "modified" is left out: the file inside has its own event).
EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileDeletedEvent, FileModifiedEvent, FileMovedEvent, FileClosedEvent,
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent,
]  # fmt: skip


def create_observer(root: Path, on_overflow: Callable[[], None]) -> BaseObserver:
    """An observer that, once started, calls `on_overflow` (in watchdog's reading thread) each time the kernel dropped
    events; where inotify is not available, watchdog's observer for the platform, which has no such signal."""
    if platform.is_linux():
        with contextlib.suppress(UnsupportedLibcError):
            return InotifyObserver(root, on_overflow)
    from watchdog.observers import Observer

    return Observer()


class _OverflowListener:
    """A watchdog `WatchCallback` that hears only the overflow; watchdog's own callback on the same watch reports
    the events."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        self._on_overflow = on_overflow

    def on_queue_overflow(self) -> None:
        self._on_overflow()

    def on_event(self, event: Any) -> None:
        pass

    def on_watch_deleted(self, wd: Any) -> None:
        pass


class InotifyObserver(BaseObserver):
    """watchdog's `InotifyObserver`, on an `InotifyFD` this class holds, with the overflow listener on `root`."""

    def __init__(self, root: Path, on_overflow: Callable[[], None]) -> None:
        from watchdog.observers.inotify import InotifyEmitter
        from watchdog.observers.inotify_c import InotifyFD

        self._root = root
        self._listener = _OverflowListener(on_overflow)
        self._inotify = InotifyFD()
        self._inotify.start()
        super().__init__(InotifyEmitter, timeout=DEFAULT_OBSERVER_TIMEOUT, inotify_fd=self._inotify)

    def on_thread_start(self) -> None:
        from watchdog.observers.inotify_c import CallbackId, InotifyConstants, Mask

        super().on_thread_start()  # the emitters add their watches, the root's among them
        flags = Mask(InotifyConstants.IN_MASK_ADD | InotifyConstants.IN_DELETE_SELF | InotifyConstants.IN_DONT_FOLLOW)
        self._inotify.add_callback(os.fsencode(self._root), flags, self._listener, CallbackId(id(self._listener)))

    def on_thread_stop(self) -> None:
        super().on_thread_stop()
        self._inotify.stop()
        self._inotify.join()
