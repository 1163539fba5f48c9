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

log = logging.getLogger(__name__)

QUIET_SECONDS = 0.15  # wait this long after the last event...
MAX_DELAY_SECONDS = 0.6  # ...but never longer than this after the first one


class CodeWatcher:
    def __init__(self, root: Path, indexer: CodeIndexer, on_update: Callable[[set[str]], None] = lambda _: None) -> None:
        self.root = root
        self.indexer = indexer
        self.on_update = on_update
        self.state: Literal["running", "off", "failed"] = "off"
        self._pending: set[str] = set()
        self._first_event = 0.0
        self._last_event = 0.0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._observer: Any = None
        self._handler: Any = None
        self._watches: dict[str, Any] = {}  # top-level directory name -> its recursive watch
        self._thread: threading.Thread | None = None

    def start(self) -> None:
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

        try:
            self._observer = Observer()
            self._handler = Handler()
            self._observer.schedule(self._handler, str(self.root), recursive=False)
            for entry in sorted(self.root.iterdir()):
                self._watch_top_level(entry.name)
            self._observer.start()
        except Exception as exc:  # e.g. the inotify watch limit
            self.state = "failed"
            log.error("file watcher could not start (%s); the code index updates on restart or `project-ledger index`", exc)
            return
        self.state = "running"
        self._thread = threading.Thread(target=self._run, name="ledger-code-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.state = "off"

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
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            while not self._stop.is_set():
                with self._lock:
                    if not self._pending:
                        break
                    now = time.monotonic()
                    ready = now - self._last_event >= QUIET_SECONDS or now - self._first_event >= MAX_DELAY_SECONDS
                    paths = self._pending if ready else set()
                    first = self._first_event
                    if ready:
                        self._pending = set()
                if not paths:
                    time.sleep(QUIET_SECONDS / 3)
                    continue
                try:
                    started = time.monotonic()
                    if self.indexer.update_paths(paths):
                        self.indexer.scan()  # an ignore file changed
                    log.debug(
                        "re-indexed %d paths in %.3fs, %.3fs after the first event",
                        len(paths), time.monotonic() - started, time.monotonic() - first,
                    )
                    self.on_update(paths)
                except Exception:
                    log.exception("re-indexing %d changed paths failed", len(paths))
