"""Watches the source tree and hands changed paths to the indexer, debounced; rescans the tree when events were lost.

watchdog's observer thread only records paths; a second thread waits until
events have been quiet for a moment (or a burst has lasted long enough), then
re-indexes what changed. An edit is usually searchable a fraction of a second
after it is saved.

When events were lost (the kernel's inotify queue overflowed, or an event could
not be handled) the paths recorded say too little: the same
thread rescans the whole tree instead, as a restart would (only files whose size
or mtime changed are read again), and `status` and `doctor` say so while it
runs. Paths that could not be re-indexed (say, on a full disk) are kept and
tried again, not dropped.

The root is watched on its own, and each top-level directory recursively,
except vendored and tool directories (`.git`, `.ledger`, `node_modules`...):
those change often, would flood the watcher with events and use up inotify
watches, and nothing in them is indexed anyway.

A process that reads its inotify events too slowly (a `git checkout` of thousands
of files writes them faster than that) loses what no longer fits in the kernel's
queue (`fs.inotify.max_queued_events`, 16,384 by default). watchdog 7.1.1 and later
repair their watches after that and hand each watch an `EventsLostEvent`; the
handler here takes it as the signal to rescan. The events asked for are those
that change what is indexed (created, deleted, modified, moved, closed after a
write), not opens and closes after reading: every read of a source file (a grep of
the tree, the indexer's own reads) would otherwise put two more events in the same
queue.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from project_ledger.code.indexer import CodeIndexer, Progress, ScanSummary
from project_ledger.code.source_files import SKIPPED_DIRS
from project_ledger.code.watch_state import WatchPublisher
from project_ledger.worker import Opening, RunAgain, Worker

log = logging.getLogger(__name__)

QUIET_SECONDS = 0.15  # wait this long after the last event...
MAX_DELAY_SECONDS = 0.6  # ...but never longer than this after the first one
RETRY_SECONDS = 5.0  # an idle watcher looks again this often, so work a full disk held back goes on without a new event
LOST_WAIT_SECONDS = 2.0  # after one watch reports lost events, wait at most this long for the others before rescanning
RESCANNING = "rescanning after the watcher dropped events"
OVERFLOW = (
    "the kernel's inotify queue overflowed"
    if sys.platform.startswith("linux")
    else "the system's queue of file events overflowed"  # Windows: watchdog reports a full change buffer so too
)
WatcherState = Literal["running", "rescanning", "off", "failed"]


@dataclass
class Rescan:
    """One rescan of the tree after the watcher dropped events."""

    reason: str
    at: str  # when the events were dropped, UTC
    summary: ScanSummary | None = None  # None until it has finished
    error: str | None = None


class CodeWatcher:
    def __init__(
        self,
        root: Path,
        indexer: CodeIndexer,
        report: Callable[[str], None] = lambda _: None,
        state_file: Path | None = None,
    ) -> None:
        """`report` hears what each round re-indexed; with `state_file`, other processes can read what the watcher
        is doing (`watch_state.py`)."""
        self.root = root
        self.indexer = indexer
        self.report = report
        self.rescans = 0  # since the watcher started
        self.latest_rescan: Rescan | None = None
        self._pending: set[str] = set()
        self._dropped: tuple[str, str] | None = None  # (why, when) events were lost since the last rescan began
        self._dropped_since = 0.0  # monotonic time of that first loss
        self._lost_from: set[str] = set()  # the watches that reported lost events since the last rescan began
        self._first_event = 0.0
        self._last_event = 0.0
        self._lock = threading.Lock()
        self._watch_lock = threading.Lock()  # top-level watches change in the observer's thread and in the worker's
        self._observer: Any = None
        self._handler: Any = None
        self._events: list[Any] = []  # the event types watched
        self._watches: dict[str, Any] = {}  # top-level directory name -> its recursive watch
        self._publisher = WatchPublisher(state_file) if state_file is not None else None
        self._worker = Worker(
            "ledger-code-watch",
            [self._reindex_when_quiet],
            poll_seconds=RETRY_SECONDS,  # and the observer wakes it with each event
            opening=Opening(
                open=self._start_observer,
                close=self._stop_observer,
                what="start the file watcher",
                retry_seconds=None,
                meanwhile="the code index updates on restart or `project-ledger index`",
            ),
        )

    @property
    def state(self) -> WatcherState:
        state = self._worker.status().state
        if state == "paused":
            state = "running"  # it still watches; only re-indexing waits for the disk
        return "rescanning" if state == "running" and self._rescan_due() else state

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

    def rescan_note(self) -> str | None:
        """The latest rescan after dropped events, due, under way or done, as `status` says it; None if there was none."""
        with self._lock:
            dropped = self._dropped
        rescan = self.latest_rescan
        if rescan is not None and rescan.summary is None and rescan.error is None:
            return f"{RESCANNING} ({rescan.reason}, {rescan.at}): {_progress(self.indexer.progress)}"
        if dropped is not None:
            failed = f"; the last attempt failed ({rescan.error}), trying again" if rescan is not None and rescan.error else ""
            return f"{RESCANNING} ({dropped[0]}, {dropped[1]}): starting once events are quiet for a moment{failed}"
        if rescan is None or rescan.summary is None:
            return None
        done = rescan.summary
        return (
            f"rescanned the tree after the watcher dropped events ({rescan.reason}, {rescan.at}): "
            f"{done.parsed:,} files re-indexed, {done.removed:,} removed, {done.files:,} in the tree, in {done.seconds:.1f} s"
            + (f"; {self.rescans} rescans since the watcher started" if self.rescans > 1 else "")
        )

    def _rescan_due(self) -> bool:
        rescan = self.latest_rescan
        return self._dropped is not None or (rescan is not None and rescan.summary is None and rescan.error is None)

    # -- the observer's side ------------------------------------------------------------

    def _start_observer(self) -> None:
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            EventsLostEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileSystemEventHandler,
        )
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if isinstance(event, EventsLostEvent):  # its path is a watch's, not a change: `on_events_lost` takes it
                    return
                try:
                    watcher._record(event.src_path)
                    if getattr(event, "dest_path", ""):
                        watcher._record(event.dest_path)
                except Exception:  # an event not handled is an event lost (and the observer's thread would end)
                    log.exception("the file watcher could not handle %s", event)
                    watcher._events_dropped("an event could not be handled")

            def on_events_lost(self, event: Any) -> None:
                watcher._events_dropped(OVERFLOW, event.src_path)

        self._observer = Observer()
        self._handler = Handler()
        # A directory's own "modified" is left out: the file inside has its own event.
        self._events = [
            FileCreatedEvent, FileDeletedEvent, FileModifiedEvent, FileMovedEvent, FileClosedEvent,
            DirCreatedEvent, DirDeletedEvent, DirMovedEvent, EventsLostEvent,
        ]  # fmt: skip
        self._observer.schedule(self._handler, str(self.root), recursive=False, event_filter=self._events)
        for entry in sorted(self.root.iterdir()):
            self._watch_top_level(entry.name)
        self._observer.start()
        self._publish()

    def _stop_observer(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            if self._observer.is_alive():  # one that failed to start has no thread to join
                self._observer.join(timeout=5)
        if self._publisher is not None:
            self._publisher.close()

    def _watch_top_level(self, name: str) -> None:
        """Watch a top-level directory recursively (once), unless it is a skipped one or a symlink."""
        path = self.root / name
        with self._watch_lock:
            if name in SKIPPED_DIRS or name in self._watches or path.is_symlink() or not path.is_dir():
                return
            self._watches[name] = self._observer.schedule(self._handler, str(path), recursive=True, event_filter=self._events)

    def _unwatch_top_level(self, name: str) -> None:
        with self._watch_lock:
            if name in self._watches:
                self._observer.unschedule(self._watches.pop(name))

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
                else:
                    self._unwatch_top_level(rel)
            except Exception:  # the directory went again meanwhile; the next event says so
                log.debug("could not (un)watch %s", rel, exc_info=True)
        with self._lock:
            self._note_event()
            self._pending.add(rel)
        self._worker.wake()

    def _events_dropped(self, why: str, watch: str | bytes | None = None) -> None:
        """Events were lost (reported by `watch`, if a watch reported it): the next round rescans the tree, once
        events have been quiet for a moment.

        An inotify overflow drops events for every watch, and watchdog reports it to each, each behind the events
        its watch read before: the root's report can come after thousands of others. So the rescan waits until
        every watch has reported (or LOST_WAIT_SECONDS have passed: on Windows a loss is one watch's), and one
        overflow costs one rescan, not one a watch. The report is recorded in the same hold of the lock that marks
        the rescan due: otherwise a rescan could start between the two and the same report call for another."""
        with self._lock:
            self._note_event()
            if watch is not None:
                self._lost_from.add(os.path.normpath(os.fsdecode(watch)))
            first = self._dropped is None
            if first:
                self._dropped = (why, time.strftime("%H:%M:%S UTC", time.gmtime()))
                self._dropped_since = time.monotonic()
        if first:  # once, not once a watch
            log.warning("the file watcher dropped events (%s): the tree is rescanned once events are quiet", why)
        self._worker.wake()

    def _watched(self) -> set[str]:
        """The paths watched: the root and each top-level directory."""
        with self._watch_lock:
            names = list(self._watches)
        return {os.path.normpath(path) for path in (str(self.root), *(str(self.root / name) for name in names))}

    def _note_event(self) -> None:
        """Under `_lock`: an event (or a loss of events) came now."""
        now = time.monotonic()
        if not self._pending and self._dropped is None:
            self._first_event = now
        self._last_event = now

    # -- the worker's side --------------------------------------------------------------

    def _reindex_when_quiet(self) -> RunAgain | None:
        """Re-index the changed paths (or rescan the tree, if events were lost) once events have been quiet for
        QUIET_SECONDS, or a burst has lasted MAX_DELAY_SECONDS; until then, ask to run again when that moment comes
        (a new event wakes it sooner)."""
        # The watches are listed (under `_watch_lock`, which a new directory's `schedule` holds) only while a loss is
        # reported; a report that lands after this look is caught below, as not yet heard from every watch.
        watched = self._watched() if self._lost_from else None
        with self._lock:
            if not self._pending and self._dropped is None:
                return None
            now = time.monotonic()
            wait = min(self._last_event + QUIET_SECONDS, self._first_event + MAX_DELAY_SECONDS) - now
            if self._lost_from and (watched is None or not watched <= self._lost_from):  # more reports of it to come
                wait = max(wait, self._dropped_since + LOST_WAIT_SECONDS - now)
            if wait > 0:
                return RunAgain(wait)
            paths, first, self._pending = self._pending, self._first_event, set()
            dropped, self._dropped = self._dropped, None
            if dropped is not None:
                self._lost_from = set()
        started = time.monotonic()
        try:
            if dropped is not None:
                self._rescan(*dropped)  # its walk sees whatever `paths` changed
            elif self.indexer.update_paths(paths):
                self.indexer.scan()  # an ignore file changed
        except BaseException:
            with self._lock:  # tried again in a later round: nothing is dropped
                self._note_event()
                self._pending |= paths
                self._dropped = self._dropped or dropped
            raise
        log.debug(
            "re-indexed %d paths in %.3fs, %.3fs after the first event",
            len(paths), time.monotonic() - started, time.monotonic() - first,
        )  # fmt: skip
        if dropped is None:
            self.report(f"re-indexed {', '.join(sorted(paths))}")
        elif note := self.rescan_note():
            self.report(note)
        return None

    def _rescan(self, why: str, at: str) -> None:
        rescan = self.latest_rescan = Rescan(why, at)
        self.rescans += 1
        self._publish()
        try:
            self._watch_top_levels()
            rescan.summary = self.indexer.scan(lambda _: self._publish(), why=RESCANNING)
        except BaseException as exc:
            rescan.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._publish()
        log.info("%s", self.rescan_note())

    def _watch_top_levels(self) -> None:
        """Watch the top-level directories that appeared while events were lost; stop watching those that went."""
        names = {entry.name for entry in os.scandir(self.root) if entry.is_dir(follow_symlinks=False)}
        for name in sorted(names):
            self._watch_top_level(name)
        for name in sorted(set(self._watches) - names):
            self._unwatch_top_level(name)

    def _publish(self) -> None:
        if self._publisher is not None:
            self._publisher.publish("rescanning" if self._rescan_due() else "running", self.rescans, self.rescan_note())


def _progress(progress: Progress) -> str:
    if not progress.running or progress.why != RESCANNING:
        return "waiting for the scan under way to end"
    if not progress.total:
        return "listing the source files"
    return f"{progress.done:,} of {progress.total:,} changed files re-indexed"
