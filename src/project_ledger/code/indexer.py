"""Keeps the code tables in step with the source tree: a full scan at start, then single paths from the watcher.

A scan stats every source file and re-parses only those whose size or mtime
changed and whose content hash really differs. Large batches are parsed in a
pool of processes (`parsing.py`), since parsing and reading the captures is
CPU-bound work that threads would serialise on the GIL; small ones in the
calling thread.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TypeVar

from project_ledger.code.languages import Grammars, language_for
from project_ledger.code.parsing import Result, WorkItem, parse_file, parse_pooled
from project_ledger.code.rows import FileRecord, ParsedFile, content_digest
from project_ledger.code.source_files import IGNORE_FILES, SKIPPED_DIRS, IgnoreRules, Skipped, SourceFile, check_file, walk
from project_ledger.code.store import CodeStore

BATCH_FILES = 200  # files per transaction
POOL_MIN_FILES = 64  # fewer changed files than this are parsed in-thread: starting workers costs more
CHUNK_FILES = 16  # files per task sent to a worker process
T = TypeVar("T")


@dataclass
class ScanSummary:
    files: int = 0  # source files in the tree
    parsed: int = 0
    unchanged: int = 0
    removed: int = 0
    seconds: float = 0.0
    skipped: Skipped = field(default_factory=Skipped)


@dataclass
class Progress:
    """What the indexer is doing, for `status` and for notes on tool results."""

    running: bool = False
    done: int = 0
    total: int = 0
    last: ScanSummary | None = None
    last_error: str | None = None
    why: str | None = None  # why a scan runs, when it is not the one at start (say, the watcher dropped events)

    def note(self) -> str | None:
        if not self.running:
            return None
        head = f"{self.why}: " if self.why else ""
        if self.total == 0:
            return f"{head}indexing: listing source files; results may be incomplete"
        return f"{head}indexing {self.done}/{self.total} files; results may be incomplete"


class CodeIndexer:
    def __init__(self, root: Path, store: CodeStore, max_file_bytes: int, workers: int | None, redact: bool) -> None:
        self.root = root
        self.store = store
        self.max_file_bytes = max_file_bytes
        self.redact = redact  # secrets in signatures, docstrings and body heads are replaced before they are stored
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))
        self.grammars = Grammars()
        self.rules = IgnoreRules(root)
        self.progress = Progress()
        self._scan_lock = threading.Lock()  # one full scan at a time
        self.cancelled = threading.Event()  # set when the server stops: a scan ends at its next batch
        self.on_change: Callable[[], None] = lambda: None  # told after each batch lands

    # -- full scans --------------------------------------------------------------

    def scan(self, report: Callable[[Progress], None] = lambda _: None, why: str | None = None) -> ScanSummary:
        """Bring the tables in line with the whole tree. Safe to call while the watcher feeds `update_paths`.
        `why` heads the progress note, when the reason is not the usual one."""
        with self._scan_lock:
            self.rules = IgnoreRules(self.root)
            summary = ScanSummary()
            started = time.perf_counter()
            self.progress = Progress(running=True, last=self.progress.last, why=why)
            report(self.progress)
            bulk = False
            wrote = False
            try:
                self.store.restore_indexes()  # after a process that died during a cold index
                known = self.store.files()
                found: list[SourceFile] = []
                changed: Iterable[SourceFile]
                if known:
                    stats = {path: (record.size, record.mtime_ns) for path, record in known.items()}
                    found = list(walk(self.root, self.rules, summary.skipped, self.max_file_bytes, known=stats))
                    changed, touched = self._changed(found, known, summary)
                    removed = sorted(set(known) - {f.path for f in found})
                    summary.removed = len(removed)
                    self.progress.total = len(changed)
                    report(self.progress)
                    if touched or removed:
                        self.store.apply([], touched, removed)
                        self.on_change()
                        wrote = True
                else:  # a first index: every file is new, so parsing starts while the walk goes on
                    bulk = True
                    self.store.defer_indexes()
                    changed = self._listed(walk(self.root, self.rules, summary.skipped, self.max_file_bytes), found)
                for batch in self._batches(self._parsed(self._parse_all(changed), summary)):
                    if self.cancelled.is_set():
                        break
                    self.store.apply(batch)
                    summary.parsed += len(batch)
                    self.progress.done += len(batch)
                    self.on_change()
                    report(self.progress)
                summary.files = len(found)
                if bulk:
                    bulk = False
                    self.store.restore_indexes()
                if wrote or summary.parsed:  # a scan that changed nothing skips a pass over every stored vector;
                    self.store.prune()  # what edits from the watcher left unused goes with the next scan that changes something
            except Exception as exc:
                self.progress.last_error = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                if bulk:  # a failed or interrupted cold index: best effort now, else the next scan builds them
                    with contextlib.suppress(Exception):
                        self.store.restore_indexes()
                summary.seconds = time.perf_counter() - started
                self.progress.running = False
                self.progress.last = summary
                report(self.progress)
            return summary

    def out_of_date(self) -> tuple[int, int]:
        """(files new or changed on disk, indexed files that are gone), found without updating anything."""
        known = self.store.files()
        found = list(walk(self.root, IgnoreRules(self.root), Skipped(), self.max_file_bytes))
        changed, _ = self._changed(found, known, ScanSummary())
        return len(changed), len(set(known) - {f.path for f in found})

    def _changed(
        self, found: list[SourceFile], known: dict[str, FileRecord], summary: ScanSummary
    ) -> tuple[list[SourceFile], list[FileRecord]]:
        """Files to parse, and files whose stat changed but whose bytes did not (only their record is refreshed)."""
        changed: list[SourceFile] = []
        touched: list[FileRecord] = []
        for source in found:
            record = known.get(source.path)
            if record is None or record.language != source.language.name:
                changed.append(source)
            elif _unchanged(record, source.size, source.mtime_ns):
                summary.unchanged += 1
            elif _file_hash(self.root / source.path) == record.hash:
                touched.append(FileRecord(source.path, record.language, source.size, source.mtime_ns, record.hash, record.lines))
                summary.unchanged += 1
            else:
                changed.append(source)
        return changed, touched

    def _listed(self, files: Iterable[SourceFile], found: list[SourceFile]) -> Iterator[SourceFile]:
        """`files` as they come, each kept in `found`; the progress total is set once the last has come."""
        for source in files:
            found.append(source)
            yield source
        self.progress.total = len(found)

    def _parse_all(self, files: Iterable[SourceFile]) -> Iterator[Result]:
        """Parse `files` (a list, or a walk still under way) in this thread if they are few, else in worker processes,
        which start as soon as the first POOL_MIN_FILES are known. Ends early when the indexer is cancelled."""
        items: Iterator[WorkItem] = ((f.path, f.language.name, f.size, f.mtime_ns) for f in files)
        if self.cancelled.is_set():
            return
        head = list(itertools.islice(items, POOL_MIN_FILES))
        if len(head) < POOL_MIN_FILES or self.workers == 1:
            results: Iterable[Result] = (
                parse_file(self.grammars, self.root, *item, redact=self.redact) for item in itertools.chain(head, items)
            )
        else:
            languages = {item[1] for item in head}
            results = parse_pooled(
                self.root, self.redact, itertools.chain(head, items), self.workers, CHUNK_FILES, self.grammars, languages
            )
        for result in results:
            if self.cancelled.is_set():
                return
            yield result

    @staticmethod
    def _parsed(results: Iterable[Result], summary: ScanSummary) -> Iterator[ParsedFile]:
        """The files that parsed; the others are counted as skipped, with their reason."""
        for result in results:
            if isinstance(result, ParsedFile):
                yield result
            else:
                summary.skipped.add(result[1].split(" (")[0], result[0])

    @staticmethod
    def _batches(items: Iterable[T]) -> Iterator[list[T]]:
        batch: list[T] = []
        for item in items:
            batch.append(item)
            if len(batch) >= BATCH_FILES:
                yield batch
                batch = []
        if batch:
            yield batch

    # -- single paths (the watcher) ------------------------------------------------

    def update_paths(self, paths: Iterable[str]) -> bool:
        """Re-index paths relative to the root that were created, changed, moved or deleted.

        A path that no longer exists purges its file, or every file under it if
        it was a directory; a directory that appeared is walked. Many files at
        once (a branch switch) are parsed in the pool and stored in batches, as
        a scan's are. An edited ignore file means a full scan, which is returned
        as True for the caller to run.
        """
        known = self.store.files()
        indexed = sorted(known)  # the files under a directory that went are found by bisection, not a pass each
        removed: set[str] = set()
        changed: dict[str, SourceFile] = {}  # by path: a directory and a file in it may both be listed
        for rel in sorted(set(paths)):
            name = PurePosixPath(rel).name
            if name in IGNORE_FILES:
                return True
            absolute = self.root / rel
            if not absolute.exists() or absolute.is_symlink():
                removed.update(files_under(indexed, rel))
                continue
            if self.rules.excluded(rel) is not None or name in SKIPPED_DIRS:
                continue
            if absolute.is_dir():  # created, or moved in: only its new or changed files are parsed
                for source in walk(self.root, self.rules, Skipped(), self.max_file_bytes, under=rel):
                    if not _unchanged(known.get(source.path), source.size, source.mtime_ns):
                        changed[source.path] = source
            elif (spec := language_for(rel)) is not None:
                try:
                    info = absolute.stat()
                except OSError:  # gone again
                    removed.update(files_under(indexed, rel))
                    continue
                if _unchanged(known.get(rel), info.st_size, info.st_mtime_ns):
                    continue
                if check_file(self.root, rel, info.st_size, self.max_file_bytes) is not None:  # too large, binary, ...
                    removed.update(files_under(indexed, rel))
                    continue
                changed[rel] = SourceFile(rel, spec, info.st_size, info.st_mtime_ns)
        for batch in self._batches(self._parse_all(changed.values())):
            parsed = [r for r in batch if isinstance(r, ParsedFile)]
            removed.update(r[0] for r in batch if not isinstance(r, ParsedFile) and r[0] in known)  # gone, unreadable
            if parsed or removed:
                self.store.apply(parsed, removed=sorted(removed))
                removed.clear()
                self.on_change()
        if removed:
            self.store.apply([], removed=sorted(removed))
            self.on_change()
        return False


def files_under(indexed: list[str], rel: str) -> list[str]:
    """The indexed files (`indexed`, sorted) that are `rel` or lie under it."""
    found = [rel] if (i := bisect.bisect_left(indexed, rel)) < len(indexed) and indexed[i] == rel else []
    start = bisect.bisect_left(indexed, rel + "/")
    end = bisect.bisect_left(indexed, rel + "0")  # "0" follows "/": the first path past those under rel/
    return found + indexed[start:end]


def _unchanged(record: FileRecord | None, size: int, mtime_ns: int) -> bool:
    return record is not None and record.size == size and record.mtime_ns == mtime_ns


def _file_hash(path: Path) -> str | None:
    try:
        return content_digest(path.read_bytes())
    except OSError:
        return None
