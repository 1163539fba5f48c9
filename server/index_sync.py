"""Keeps a search index caught up with the journal, and the journal's vectors caught up with the model.

Nothing here runs on a request's critical path except the catch-up before each
search, which is one indexed read when the index is current. A worker thread
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
from collections.abc import Callable
from dataclasses import dataclass

from project_ledger.indexers.embedding import Embedder, from_bytes, to_bytes
from project_ledger.indexers.memory_index import (
    Candidates,
    Compactable,
    IndexDoc,
    MemoryIndex,
    SearchFilter,
    SparseEncoder,
)

from .errors import IndexUnavailable
from .journal import Change, Journal

log = logging.getLogger(__name__)

EMBED_BATCH = 64
POLL_SECONDS = 1.0
CATCH_UP_BATCH = 1024
PERSIST_EVERY = 16  # batches between watermark saves; each save flushes the index to disk
GRAPH_MIN_POINTS = 20_000  # below this a full scan answers in a few milliseconds
FORGET_SETTLE_SECONDS = 5.0  # compact once a burst of forgets is over
RETRY_FAILED_COMPACTION_SECONDS = 600.0


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


def apply_changes(journal: Journal, index: MemoryIndex, encoder: SparseEncoder, model: str) -> int:
    """Bring `index` up to the journal's latest revision.

    Returns how many deletions may have hit points the index held: none when it
    was built from empty, since forgotten memories were then never in it.
    """
    cursor = start = index.watermark()
    deleted = batches = 0
    while changes := journal.changes_since(cursor, model, CATCH_UP_BATCH):
        gone = [c.seq for c in changes if not c.live]
        index.delete(gone)
        index.upsert([_doc(c, encoder) for c in changes if c.live])
        if start > 0:
            deleted += len(gone)
        cursor = changes[-1].rev
        batches += 1
        if batches % PERSIST_EVERY == 0:  # a long rebuild keeps its progress across a crash
            index.set_watermark(cursor)
    if cursor != index.watermark():
        index.set_watermark(cursor)
    return deleted


@dataclass
class _Compaction:
    process: subprocess.Popen[bytes]
    erasing: bool  # started because memories were forgotten
    started: float


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
        self._compaction: _Compaction | None = None
        self._last_forget: float | None = None  # monotonic time of the last deletion not yet compacted away
        self._compaction_failed_at: float | None = None
        self.events: list[str] = []

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Open the index and start the worker in the background; returns at once."""
        self._thread = threading.Thread(target=self._run, name="ledger-index", daemon=True)
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
            if self._compaction is not None:
                self._compaction.process.kill()
                self._compaction.process.wait()
                self._compaction = None
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

    def _run(self) -> None:
        self._open()
        if self._index is None:
            return
        self.embedder.load()
        self._model_settled.set()
        while not self._stop.is_set():
            try:
                while not self._stop.is_set() and self.embed_missing(EMBED_BATCH):
                    self.catch_up()
                self.catch_up()
                self._tend_compaction()
            except Exception:
                log.exception("background indexing failed; retrying")
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()

    # -- searching and catching up -----------------------------------------------

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
        assert self._encoder is not None
        with index.sync_lock():
            epoch = self._journal.reindex_epoch()
            if index.epoch() != epoch:
                index.reset(epoch)
                self.events.append("index rebuilt on request (project-ledger reindex)")
            if apply_changes(self._journal, index, self._encoder, self.embedder.identity):
                self._last_forget = time.monotonic()

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

    # -- vectors -------------------------------------------------------------------

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

    # -- compaction ------------------------------------------------------------------

    def _tend_compaction(self) -> None:
        """Start a compaction when one is due; swap in its result when it is done."""
        index = self._index
        if not isinstance(index, Compactable):
            return
        if self._compaction is not None:
            if self._compaction.process.poll() is not None:
                self._finish_compaction(index, self._compaction)
            return
        now = time.monotonic()
        if self._compaction_failed_at is not None and now - self._compaction_failed_at < RETRY_FAILED_COMPACTION_SECONDS:
            return
        erasing = self._last_forget is not None and now - self._last_forget >= FORGET_SETTLE_SECONDS
        if erasing or (index.count() >= GRAPH_MIN_POINTS and not index.has_graphs()):
            self._start_compaction(index, erasing)

    def _start_compaction(self, index: Compactable, erasing: bool) -> None:
        target = index.compaction_target()
        shutil.rmtree(target, ignore_errors=True)
        command = [
            sys.executable,
            "-m",
            "project_ledger.compaction",
            str(self._journal.path),
            str(target),
            self.embedder.identity,
            str(self.embedder.dim),
        ]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._compaction = _Compaction(process, erasing, time.monotonic())
        log.info("compaction started (%s)", "erasing forgotten memories" if erasing else "building search graphs")

    def _finish_compaction(self, index: Compactable, compaction: _Compaction) -> None:
        self._compaction = None
        _, stderr = compaction.process.communicate()
        elapsed = time.monotonic() - compaction.started
        if compaction.process.returncode != 0:
            self._compaction_failed_at = time.monotonic()
            reason = stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            self.events.append(f"compaction failed after {elapsed:.0f}s ({reason[0]}); retrying in 10 minutes")
            log.error(self.events[-1])
            return
        with self._lock:
            index.replace_with(index.compaction_target(), drop_idle_copies=compaction.erasing)
            if compaction.erasing and self._last_forget is not None and self._last_forget < compaction.started:
                self._last_forget = None  # forgets after the start are in the new shard's catch-up, not its data
            self._catch_up_locked()
        what = "forgotten memories erased from disk" if compaction.erasing else "search graphs built"
        self.events.append(f"index compacted in {elapsed:.0f}s: {what}")
        log.info(self.events[-1])

    # -- status ----------------------------------------------------------------------

    def state(self) -> str:
        if not self._opened.is_set():
            return "opening"
        return "ready" if self._index is not None else "failed"

    def compaction_state(self) -> str | None:
        compaction = self._compaction
        if compaction is None:
            return None
        why = "erasing forgotten memories" if compaction.erasing else "building search graphs"
        return f"running for {time.monotonic() - compaction.started:.0f}s ({why})"

    @property
    def open_error(self) -> str | None:
        return self._open_error
