"""Watches the source tree and hands changed paths to the indexer, debounced.

watchdog's observer thread only records paths; a second thread waits until
events have been quiet for a moment (or a burst has lasted long enough), then
re-indexes what changed. An edit is usually searchable a fraction of a second
after it is saved.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from project_ledger.indexers.source_files import SKIPPED_DIRS

from .code_indexer import CodeIndexer

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
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                watcher._record(event.src_path)
                if getattr(event, "dest_path", ""):
                    watcher._record(event.dest_path)

        try:
            self._observer = Observer()
            self._observer.schedule(Handler(), str(self.root), recursive=True)
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

    def _record(self, path: str | bytes) -> None:
        text = os.fsdecode(path)
        try:
            rel = Path(text).relative_to(self.root).as_posix()
        except ValueError:
            return
        if rel == "." or any(part in SKIPPED_DIRS for part in rel.split("/")):
            return
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
                    if ready:
                        self._pending = set()
                if not paths:
                    time.sleep(QUIET_SECONDS / 3)
                    continue
                try:
                    if self.indexer.update_paths(paths):
                        self.indexer.scan()  # an ignore file changed
                    self.on_update(paths)
                except Exception:
                    log.exception("re-indexing %d changed paths failed", len(paths))
