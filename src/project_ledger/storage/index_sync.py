"""Keeps a search index caught up with the journal, and the journal's vectors caught up with the model.

Nothing here runs on a request's critical path except the catch-up before each
search (`caught_up`, which the searches of `search_gateway` go through), one
indexed read when the index is current, and the vectors of a few memories
written just before it (`embed_fresh`). A worker thread
opens the index, loads the model, embeds memories that have no vector yet,
applies changes made by other processes (it polls the journal once a second,
since their writes raise no event here) and starts compactions.

Compaction (embedded index only) rebuilds the shard from the journal in a child
process, builds its search graphs there and swaps it in. It runs when a large
index has no graphs yet, and after memories were forgotten, so that their
vectors leave the disk and not only the search results.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from project_ledger.errors import IndexUnavailable
from project_ledger.search.embedding import Embedder, from_bytes, to_bytes
from project_ledger.search.index import Compactable, IndexDoc, SearchIndex, SlotState
from project_ledger.search.sparse import SparseEncoder
from project_ledger.storage.journal import Change, Journal, utc_now
from project_ledger.worker import Opening, Worker

log = logging.getLogger(__name__)

EMBED_BATCH = 64
FRESH_EMBED_MOST = 8  # a search embeds up to this many just-written memories itself; a longer backlog is the worker's
FRESH_EMBED_WAIT_SECONDS = 2.0  # how long a search waits for the worker's batch (small when the backlog is small)
POLL_SECONDS = 1.0
CATCH_UP_BATCH = 1024
PERSIST_EVERY = 16  # batches between watermark saves; each save flushes the index to disk
GRAPH_MIN_POINTS = 20_000  # below this a full scan answers in a few milliseconds
FORGET_SETTLE_SECONDS = 5.0  # compact once a burst of forgets is over
RETRY_FAILED_COMPACTION_SECONDS = 600.0
RETRY_OPEN_SECONDS = 30.0


def _doc(change: Change, encoder: SparseEncoder) -> IndexDoc:
    return IndexDoc(
        seq=change.seq,
        sparse=encoder.document(change.text),
        vector=from_bytes(change.vector) if change.vector is not None else None,
        kind=change.kind,
        tags=change.tags,
        session=change.session,
        pinned=change.pinned,
        superseded=change.superseded,
        created=change.created,
    )


def apply_changes(journal: Journal, index: SearchIndex, encoder: SparseEncoder, model: str) -> None:
    """Bring `index` up to the journal's latest revision.

    An index that starts empty holds none of the memories forgotten so far, so
    it is marked erased through the current forget count before it fills.
    """
    cursor = index.watermark()
    if cursor == 0 and isinstance(index, Compactable) and (forgets := journal.forget_count()) != index.erased_through():
        index.set_erased_through(forgets)
    batches = 0
    while changes := journal.changes_since(cursor, model, CATCH_UP_BATCH):
        index.delete([c.seq for c in changes if not c.live])
        index.upsert([_doc(c, encoder) for c in changes if c.live])
        cursor = changes[-1].rev
        batches += 1
        if batches % PERSIST_EVERY == 0:  # a long rebuild keeps its progress across a crash
            index.set_watermark(cursor)
    if cursor != index.watermark():
        index.set_watermark(cursor)


@dataclass
class _Compaction:
    process: subprocess.Popen[bytes]
    erasing: bool  # started because memories were forgotten
    started: float
    log: Path


class TimedEvents(list[str]):
    """A history whose entries start with the UTC time they were added: `2026-12-01 23:31:05Z index rebuilt ...`."""

    def append(self, event: str) -> None:
        super().append(f"{utc_now()[:19].replace('T', ' ')}Z {event}")

    def extend(self, events: Iterable[str]) -> None:
        for event in events:
            self.append(event)


class IndexSync:
    def __init__(
        self,
        journal: Journal,
        open_index: Callable[[], SearchIndex],
        embedder: Embedder,
        read_slot: Callable[[], SlotState | None] | None = None,
    ) -> None:
        self._journal = journal
        self._open_index = open_index
        self._read_slot = read_slot
        self.recorded: SlotState | None = None  # what `read_recorded` found, in a process that did not open the index
        self.embedder = embedder
        self._encoder: SparseEncoder | None = None
        self._index: SearchIndex | None = None
        self._lock = threading.RLock()  # one catch-up at a time; searches wait for it
        self._model_settled = threading.Event()
        self._before_model: Callable[[], None] | None = None
        self._loading_model = False  # the worker is in the model's load
        self._embed_lock = threading.Lock()  # one embedding batch at a time: the worker's, or a search's fresh one
        self._complete_at = -1  # a journal revision at which every memory had a vector (-1: not known yet)
        self._compaction: _Compaction | None = None
        self._compaction_failed_at: float | None = None
        self._forgets_seen = -1
        self._forgets_changed_at = 0.0
        self.events: list[str] = TimedEvents()  # the index's own, and the worker's pauses: one history for status
        self._worker = Worker(
            "ledger-index",
            [self._embed_backlog, self.catch_up, self._tend_compaction, self._purge_wal],
            poll_seconds=POLL_SECONDS,  # other processes' writes raise no event here: poll the journal for them
            opening=Opening(
                open=self._open,
                close=self._close,
                what="open the search index",
                retry_seconds=RETRY_OPEN_SECONDS,
                then=self._load_model,  # searches answer on BM25 while the model loads
            ),
            events=self.events,
        )

    # -- lifecycle -------------------------------------------------------------

    def start(self, before_model: Callable[[], None] | None = None) -> None:
        """Open the index and start the worker in the background; returns at once. `before_model` runs in the worker
        between the open and the model's load (a server holds the load back while a hook is on its way)."""
        self._before_model = before_model
        self._worker.start()

    def opened(self, timeout: float) -> bool:
        """Wait until the first open attempt is over, for at most `timeout` seconds; whether it is."""
        return self._worker.wait_opened(timeout)

    def open_now(self) -> bool:
        """Open and catch up in the calling thread (the CLI's way); whether it opened."""
        return self._worker.open_now()

    def stop(self) -> None:
        # A model load is not waited for (a second or more, for a server whose client left during its start-up): once
        # loaded, the worker sees the stop and ends with nothing left to write; the index is closed here meanwhile.
        self._worker.stop(timeout=0.0 if self._loading_model else 30)

    def read_recorded(self) -> bool:
        """Instead of opening the index: read what the slot this process would open recorded when last written
        (the CLI's `status`, which then loads, catches up and flushes nothing). Whether that is known and was
        written for the journal's current reindex epoch; if not, only opening the index tells."""
        recorded = self._read_slot() if self._read_slot is not None else None
        if recorded is None or recorded.epoch != self._journal.reindex_epoch():
            return False
        self.recorded = recorded
        return True

    def wait_for_model(self, timeout: float) -> None:
        """Give a model that is loading right now a moment to finish, so an early recall can still be hybrid."""
        self._model_settled.wait(timeout)

    def forgo_model(self) -> None:
        """This process searches on BM25 alone and never loads the model (a hook, which must answer at once):
        a search does not wait for a model that will not come."""
        self._model_settled.set()

    def kick(self) -> None:
        """Something was written: embed and index it soon."""
        self._worker.wake()

    def _open(self) -> None:
        with self._lock:
            self._encoder = SparseEncoder()
            self._index = self._open_index()
            self._verify(self._index)

    def _close(self) -> None:
        """Give the index's slot back (after a failed open, before the retry; and at stop), ending any compaction."""
        with self._lock:
            if self._compaction is not None:
                self._compaction.process.kill()
                self._compaction.process.wait()
                self._compaction = None
            if self._index is not None:
                self._index.close()
                self._index = None

    def _load_model(self) -> None:
        if self._before_model is not None:
            self._before_model()
        if not self._worker.stopping:  # a server closed while it held the load back loads no model
            self._loading_model = True
            try:
                self.embedder.load()
            finally:
                self._loading_model = False
        self._model_settled.set()

    # -- the worker's steps: each round, after a kick or once a second -----------------

    def _embed_backlog(self) -> None:
        while not self._worker.stopping and self.embed_missing(EMBED_BATCH):
            self.catch_up()

    def _purge_wal(self) -> None:
        """A purge that another process's reader holds back is simply tried again next round."""
        self._journal.purge_wal()

    # -- the index, caught up -------------------------------------------------------

    def index(self, timeout: float = 60.0) -> SearchIndex:
        """The open index, waiting for the start-up open if it is still running."""
        if not self._worker.wait_opened(timeout):
            raise IndexUnavailable("the search index is still opening; retry in a few seconds")
        if self._index is None:
            raise IndexUnavailable(
                f"the search index could not be opened ({self._worker.open_error}); the journal is intact and the server "
                f"retries every {RETRY_OPEN_SECONDS:.0f}s. `project-ledger status` shows the cause."
            )
        return self._index

    def encoder(self) -> SparseEncoder:
        """The BM25 encoder the index's documents are made with, once the index is open."""
        self.index()
        assert self._encoder is not None
        return self._encoder

    @contextmanager
    def caught_up(self) -> Iterator[SearchIndex]:
        """The open index, caught up with the journal and held, while the caller reads it, against any other
        catch-up (here, or in another process sharing it)."""
        index = self.index()
        with self._lock, index.sync_lock():
            self._apply(index)
            yield index

    def catch_up(self) -> None:
        index = self.index()
        with self._lock, index.sync_lock():
            self._apply(index)

    def _apply(self, index: SearchIndex) -> None:
        """Catch up. The caller holds `self._lock` and `index.sync_lock()`."""
        assert self._encoder is not None
        epoch = self._journal.reindex_epoch()
        if index.epoch() != epoch:
            index.reset(epoch)
            self.events.append("index rebuilt on request (project-ledger reindex)")
        apply_changes(self._journal, index, self._encoder, self.embedder.identity)
        self._take_events(index)

    def _take_events(self, index: SearchIndex) -> None:
        """Move what the index recorded (a rebuild at open, holding it in memory on a full disk) into the history."""
        if index.events:
            self.events.extend(index.events)
            index.events.clear()

    def _verify(self, index: SearchIndex) -> None:
        """A shard can load yet have lost points (truncated files): compare with the journal, rebuild if off.

        The comparison needs the index to reflect exactly the journal state that
        is counted, so it is made against one snapshot, after catching up to it;
        if writes keep arriving it is left for the next start.
        """
        with index.sync_lock():
            for _ in range(3):
                self._apply(index)
                rev, expected = self._journal.rev_and_indexable_count()
                if rev == index.watermark():
                    break
            else:
                return
            actual = index.count()
            if actual != expected:
                self.events.append(f"index held {actual} points but the journal has {expected} memories: rebuilt")
                log.warning(self.events[-1])
                index.reset(self._journal.reindex_epoch())
                self._apply(index)

    def rebuild(self) -> int:
        """Drop this process's index and rebuild it from the journal; ask every other process to do the same."""
        self._journal.request_reindex()
        index = self.index()
        with self._lock, index.sync_lock():
            self._apply(index)
            return index.count()

    def figures(self, timeout: float) -> tuple[int, int] | None:
        """(watermark, points), read under the lock a rebuild holds; None if it holds it longer than `timeout`."""
        if not self._lock.acquire(timeout=timeout):
            return None
        try:
            index = self._index
            return (index.watermark(), index.count()) if index is not None else (0, 0)
        finally:
            self._lock.release()

    # -- vectors -------------------------------------------------------------------

    def embed_all(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every memory that has no vector for the current model, now, in this thread (the CLI's way; a
        server does it in the background). `progress(done, total)` follows each batch. Returns how many."""
        total, done = self._journal.count_missing_embeddings(self.embedder.identity), 0
        while batch := self.embed_missing(EMBED_BATCH):
            done += batch
            if progress is not None:
                progress(done, total)
        return done

    def embed_missing(self, limit: int) -> int:
        """Embed up to `limit` memories that have no vector for the current model. Returns how many."""
        if self.embedder.state != "ready":
            return 0
        with self._embed_lock:
            return self._embed(self._journal.missing_embeddings(self.embedder.identity, limit))

    def embed_fresh(self) -> None:
        """Give memories written a moment ago their vectors now, when there are only a few of them.

        Otherwise a recall made right after `remember` finds the new memory by its keywords alone, and
        look-alikes that have vectors can outrank it. A longer backlog (an import, a new model) stays with
        the worker, so a search never waits for more than a few texts to embed.
        """
        if self.embedder.state != "ready":
            return
        rev = self._journal.rev()
        if rev == self._complete_at:  # nothing written since every memory had a vector: one read, no scan
            return
        since = self._complete_at if self._complete_at >= 0 else None

        def missing() -> list[tuple[int, str]]:
            return self._journal.missing_embeddings(self.embedder.identity, FRESH_EMBED_MOST + 1, changed_after=since)

        if len(missing()) > FRESH_EMBED_MOST:
            return
        if not self._embed_lock.acquire(timeout=FRESH_EMBED_WAIT_SECONDS):  # the worker is on a batch: use its result
            return
        try:
            pending = missing()
            if not pending:
                self._complete_at = rev
            elif len(pending) <= FRESH_EMBED_MOST:
                self._embed(pending)
        finally:
            self._embed_lock.release()

    def _embed(self, pending: list[tuple[int, str]]) -> int:
        """Embed and store these memories' texts. The caller holds `self._embed_lock`."""
        if not pending:
            return 0
        started = time.perf_counter()
        vectors = self.embedder.embed_documents([text for _, text in pending])
        self._journal.store_embeddings(
            self.embedder.identity, [(seq, to_bytes(vector)) for (seq, _), vector in zip(pending, vectors, strict=True)]
        )
        log.debug("embedded %d memories in %.2fs", len(pending), time.perf_counter() - started)
        return len(pending)

    # -- compaction ------------------------------------------------------------------

    def _tend_compaction(self) -> None:
        """Start a compaction when one is due; swap in its result when it is done."""
        with self._lock:  # a search may be rebuilding the index (reindex request) right now
            self._tend_compaction_locked()

    def _tend_compaction_locked(self) -> None:
        index = self._index
        if not isinstance(index, Compactable):
            return
        if self._compaction is not None:
            if self._compaction.process.poll() is not None:
                self._finish_compaction(index, self._compaction)
            return
        if index.held_in_memory:  # no room on the disk for a new shard
            return
        now = time.monotonic()
        if self._compaction_failed_at is not None and now - self._compaction_failed_at < RETRY_FAILED_COMPACTION_SECONDS:
            return
        forgets = self._journal.forget_count()
        if forgets != self._forgets_seen:
            self._forgets_seen, self._forgets_changed_at = forgets, now
        erasing = forgets > index.erased_through() and now - self._forgets_changed_at >= FORGET_SETTLE_SECONDS
        if erasing or (index.count() >= GRAPH_MIN_POINTS and not index.has_graphs()):
            self._start_compaction(index, erasing)

    def _start_compaction(self, index: Compactable, erasing: bool) -> None:
        target = index.compaction_target()
        shutil.rmtree(target, ignore_errors=True)
        command = [
            sys.executable,
            "-m",
            "project_ledger.storage.compaction",
            str(self._journal.path),
            str(target),
            self.embedder.identity,
            str(self.embedder.dim),
        ]
        log_path = target.with_name("compaction.log")
        with log_path.open("wb") as log_file:  # the child keeps its own descriptor
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file)
        self._compaction = _Compaction(process, erasing, time.monotonic(), log_path)
        log.info("compaction started (%s)", "erasing forgotten memories" if erasing else "building search graphs")

    def _finish_compaction(self, index: Compactable, compaction: _Compaction) -> None:
        self._compaction = None
        elapsed = time.monotonic() - compaction.started
        if compaction.process.returncode != 0:
            self._compaction_failed_at = time.monotonic()
            lines = compaction.log.read_text(errors="replace").strip().splitlines() if compaction.log.exists() else []
            self.events.append(
                f"compaction failed after {elapsed:.0f}s ({lines[-1] if lines else 'no output'}; see {compaction.log}); "
                "retrying in 10 minutes"
            )
            log.error(self.events[-1])
            return
        # the caller, _tend_compaction, holds self._lock
        index.replace_with(index.compaction_target(), drop_idle_copies=compaction.erasing)
        self.catch_up()
        what = "forgotten memories erased from disk" if compaction.erasing else "search graphs built"
        self.events.append(f"index compacted in {elapsed:.0f}s: {what}")
        log.info(self.events[-1])

    # -- status ----------------------------------------------------------------------

    def state(self) -> Literal["opening", "ready", "failed", "not-opened"]:
        if not self._worker.wait_opened(0):
            return "not-opened" if self.recorded is not None else "opening"
        return "ready" if self._index is not None else "failed"

    def compaction_state(self) -> str | None:
        compaction = self._compaction
        if compaction is None:
            return None
        why = "erasing forgotten memories" if compaction.erasing else "building search graphs"
        return f"running for {time.monotonic() - compaction.started:.0f}s ({why})"

    @property
    def open_error(self) -> str | None:
        return self._worker.open_error
