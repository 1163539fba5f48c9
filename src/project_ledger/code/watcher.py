"""Watches the source tree and hands changed paths to the indexer, debounced.

watchdog's observer thread only records paths; a second thread waits until
events have been quiet for a moment (or a burst has lasted long enough), then
re-indexes what changed. An edit is usually searchable a fraction of a second
after it is saved.

The root is watched on its own, and each top-level directory recursively,
except vendored and tool directories (`.git`, `.ledger`, `node_modules`...):
those change often, would flood the watcher with events and use up inotify
watches, and nothing in them is indexed anyway.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from project_ledger.code.indexer import CodeIndexer
from project_ledger.code.source_files import SKIPPED_DIRS
from project_ledger.worker import Opening, RunAgain, Worker

log = logging.getLogger(__name__)

QUIET_SECONDS = 0.15  # wait this long after the last event...
MAX_DELAY_SECONDS = 0.6  # ...but never longer than this after the first one


class CodeWatcher:
    def __init__(self, root: Path, indexer: CodeIndexer, on_update: Callable[[set[str]], None] = lambda _: None) -> None:
        self.root = root
        self.indexer = indexer
        self.on_update = on_update
        self._pending: set[str] = set()
        self._first_event = 0.0
        self._last_event = 0.0
        self._lock = threading.Lock()
        self._observer: Any = None
        self._handler: Any = None
        self._watches: dict[str, Any] = {}  # top-level directory name -> its recursive watch
        self._worker = Worker(
            "ledger-code-watch",
            [self._reindex_when_quiet],
            poll_seconds=None,  # the observer wakes it with each event
            opening=Opening(
                open=self._start_observer,
                close=self._stop_observer,
                what="start the file watcher",
                retry_seconds=None,
                meanwhile="the code index updates on restart or `project-ledger index`",
            ),
        )

    @property
    def state(self) -> Literal["running", "off", "failed"]:
        state = self._worker.status().state
        return "running" if state == "paused" else state  # it still watches; only re-indexing waits for the disk

    @property
    def attempted(self) -> bool:
        """Whether `start` has tried to start it (it may have failed: see `state`)."""
        return self._worker.wait_opened(0)

    def start(self) -> None:
        """Start watching, in the calling thread: `state` says at once whether it could."""
        if self._worker.open_now():
            self._worker.start()

    def stop(self) -> None:
        self._worker.stop(timeout=10)

    def _start_observer(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                if event.is_directory and event.event_type == "modified":
                    return  # a file inside changed: that file has its own event
                watcher._record(event.src_path)
                if getattr(event, "dest_path", ""):
                    watcher._record(event.dest_path)

        self._observer = Observer()
        self._handler = Handler()
        self._observer.schedule(self._handler, str(self.root), recursive=False)
        for entry in sorted(self.root.iterdir()):
            self._watch_top_level(entry.name)
        self._observer.start()  # e.g. the inotify watch limit fails it here

    def _stop_observer(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            if self._observer.is_alive():  # one that failed to start has no thread to join
                self._observer.join(timeout=5)

    def _watch_top_level(self, name: str) -> None:
        """Watch a top-level directory recursively (once), unless it is a skipped one or a symlink."""
        path = self.root / name
        if name in SKIPPED_DIRS or name in self._watches or path.is_symlink() or not path.is_dir():
            return
        self._watches[name] = self._observer.schedule(self._handler, str(path), recursive=True)

    def _record(self, path: str | bytes) -> None:
        text = os.fsdecode(path)
        try:
            rel = Path(text).relative_to(self.root).as_posix()
        except ValueError:
            return
        if rel == "." or any(part in SKIPPED_DIRS for part in rel.split("/")):
            return
        if "/" not in rel:  # a top-level entry appeared or went: start or stop watching inside it
            try:
                if (self.root / rel).is_dir():
                    self._watch_top_level(rel)
                elif rel in self._watches:
                    self._observer.unschedule(self._watches.pop(rel))
            except Exception:  # the directory went again meanwhile; the next event says so
                log.debug("could not (un)watch %s", rel, exc_info=True)
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                self._first_event = now
            self._pending.add(rel)
            self._last_event = now
        self._worker.wake()

    def _reindex_when_quiet(self) -> RunAgain | None:
        """Re-index the changed paths once events have been quiet for QUIET_SECONDS, or a burst has lasted
        MAX_DELAY_SECONDS; until then, ask to run again when that moment comes (a new event wakes it sooner)."""
        with self._lock:
            if not self._pending:
                return None
            wait = min(self._last_event + QUIET_SECONDS, self._first_event + MAX_DELAY_SECONDS) - time.monotonic()
            if wait > 0:
                return RunAgain(wait)
            paths, first, self._pending = self._pending, self._first_event, set()
        started = time.monotonic()
        if self.indexer.update_paths(paths):
            self.indexer.scan()  # an ignore file changed
        log.debug(
            "re-indexed %d paths in %.3fs, %.3fs after the first event",
            len(paths), time.monotonic() - started, time.monotonic() - first,
        )  # fmt: skip
        self.on_update(paths)
        return None
