"""Keeps a search index caught up with the journal, and the journal's vectors caught up with the model.

Nothing here runs on a request's critical path except `catch_up()`, which is
cheap when the index is current (one indexed read of the revision counter).
The worker thread opens the index, loads the model, embeds memories that have
no vector yet and applies changes made by other processes. It polls the
journal once a second because another process's writes raise no event here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from project_ledger.indexers.embedding import Embedder, from_bytes, to_bytes
from project_ledger.indexers.memory_index import Candidates, IndexDoc, MemoryIndex, SearchFilter, SparseEncoder

from .errors import IndexUnavailable
from .journal import Change, Journal

log = logging.getLogger(__name__)

EMBED_BATCH = 64
POLL_SECONDS = 1.0


class IndexSync:
    def __init__(self, journal: Journal, open_index: Callable[[], MemoryIndex], embedder: Embedder) -> None:
        self._journal = journal
        self._open_index = open_index
        self.embedder = embedder
        self._encoder: SparseEncoder | None = None
        self._index: MemoryIndex | None = None
        self._open_error: str | None = None
        self._opened = threading.Event()
        self._lock = threading.RLock()  # one catch-up at a time; searches wait for it
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._model_settled = threading.Event()
        self._thread: threading.Thread | None = None
        self.events: list[str] = []

    # -- lifecycle -------------------------------------------------------------

    def start(self, load_model: bool = True) -> None:
        """Open the index and start the worker in the background; returns at once."""
        self._thread = threading.Thread(target=self._run, args=(load_model,), name="ledger-index", daemon=True)
        self._thread.start()

    def open_now(self) -> None:
        """Open and catch up in the calling thread (the CLI's way)."""
        self._open()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None

    def wait_for_model(self, timeout: float) -> None:
        """Give a model that is loading right now a moment to finish, so an early recall can still be hybrid."""
        self._model_settled.wait(timeout)

    def kick(self) -> None:
        """Something was written: embed and index it soon."""
        self._wake.set()

    def _open(self) -> None:
        try:
            with self._lock:
                self._encoder = SparseEncoder()
                self._index = self._open_index()
                self.events.extend(self._index.events)
                self._catch_up_locked()
                self._verify_locked()
        except Exception as exc:
            self._open_error = f"{type(exc).__name__}: {exc}"
            log.error("search index could not be opened: %s", self._open_error)
        finally:
            self._opened.set()

    def _run(self, load_model: bool) -> None:
        self._open()
        if self._index is None:
            return
        if load_model:
            self.embedder.load()
        self._model_settled.set()
        while not self._stop.is_set():
            try:
                while not self._stop.is_set() and self.embed_missing(EMBED_BATCH):
                    self.catch_up()
                self.catch_up()
            except Exception:
                log.exception("background indexing failed; retrying")
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()

    # -- work --------------------------------------------------------------------

    def index(self, timeout: float = 60.0) -> MemoryIndex:
        """The open index, waiting for the start-up open if it is still running."""
        if not self._opened.wait(timeout):
            raise IndexUnavailable("the search index is still opening; retry in a few seconds")
        if self._index is None:
            raise IndexUnavailable(
                f"the search index could not be opened ({self._open_error}); the journal is intact. "
                "Run `project-ledger reindex` to rebuild it."
            )
        return self._index

    def candidates(self, query: str, dense: list[float] | None, where: SearchFilter, limit: int) -> Candidates:
        """Catch up with the journal, then search; no catch-up can interleave with the search."""
        index = self.index()
        with self._lock:
            self._catch_up_locked()
            assert self._encoder is not None
            return index.candidates(dense, self._encoder.query(query), where, limit)

    def catch_up(self) -> None:
        with self._lock:
            self._catch_up_locked()

    def _catch_up_locked(self) -> None:
        index = self._index
        if index is None:
            raise IndexUnavailable(f"the search index is not open ({self._open_error or 'still opening'})")
        with index.sync_lock():
            epoch = self._journal.reindex_epoch()
            if index.epoch() != epoch:
                index.reset(epoch)
                self.events.append("index rebuilt on request (project-ledger reindex)")
            start = index.watermark()
            while True:
                changes = self._journal.changes_since(index.watermark(), self.embedder.identity)
                if not changes:
                    break
                live = [c for c in changes if c.live]
                index.delete([c.seq for c in changes if not c.live])
                index.upsert([self._doc(c) for c in live])
                index.set_watermark(changes[-1].rev)
            if index.watermark() != start:
                log.debug("index caught up from rev %d to %d", start, index.watermark())

    def _doc(self, change: Change) -> IndexDoc:
        assert self._encoder is not None
        return IndexDoc(
            seq=change.seq,
            sparse=self._encoder.document(change.text),
            vector=from_bytes(change.vector) if change.vector is not None else None,
            kind=change.kind,
            tags=change.tags,
            session=change.session,
            pinned=change.pinned,
            superseded=change.superseded,
            created=change.created,
        )

    def _verify_locked(self) -> None:
        """A shard can load yet have lost points (truncated files): compare with the journal, rebuild if off."""
        index = self._index
        assert index is not None
        expected = self._journal.indexable_count()
        actual = index.count()
        if actual != expected:
            self.events.append(f"index held {actual} points but the journal has {expected} memories: rebuilt")
            log.warning(self.events[-1])
            with index.sync_lock():
                index.reset(self._journal.reindex_epoch())
            self._catch_up_locked()

    def rebuild(self) -> int:
        """Drop this process's index and rebuild it from the journal; ask every other process to do the same."""
        self._journal.request_reindex()
        self.catch_up()
        return self.index().count()

    def embed_missing(self, limit: int) -> int:
        """Embed up to `limit` memories that have no vector for the current model. Returns how many."""
        if self.embedder.state != "ready":
            return 0
        pending = self._journal.missing_embeddings(self.embedder.identity, limit)
        if not pending:
            return 0
        started = time.perf_counter()
        vectors = self.embedder.embed_documents([text for _, text in pending])
        self._journal.store_embeddings(
            self.embedder.identity, [(seq, to_bytes(vector)) for (seq, _), vector in zip(pending, vectors, strict=True)]
        )
        log.debug("embedded %d memories in %.2fs", len(pending), time.perf_counter() - started)
        return len(pending)

    def state(self) -> str:
        if not self._opened.is_set():
            return "opening"
        return "ready" if self._index is not None else "failed"

    @property
    def open_error(self) -> str | None:
        return self._open_error
