"""Hybrid search over code symbols: BM25 on identifier-aware tokens plus dense vectors, in their own shard.

Symbols become searchable by BM25 as soon as they are parsed. Their dense
vectors are computed in the background (the model is the slow part: about 120-145
symbol texts per CPU second with the integer session, through `embedding.for_code`, see
the README's embedding benchmark) and stored in the journal by text hash, so an
edit re-embeds only the symbols whose text changed. Until the vectors have
caught up, results say how many symbols are ranked on BM25 alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from project_ledger.code.naming import asks_about_tests, names_asked, spellings
from project_ledger.code.rows import embed_hash
from project_ledger.code.source_files import is_test_file
from project_ledger.code.store import CodeStore, StoredSymbol, SymbolChange, named, scope
from project_ledger.errors import IndexUnavailable
from project_ledger.search.embedding import CodeEmbedder, Embedder, from_bytes, to_bytes
from project_ledger.search.fusion import coverage, fuse, relevance, shifted
from project_ledger.search.index import Candidates, Match, PayloadType, SearchIndex
from project_ledger.search.process_memory import release_freed_memory
from project_ledger.search.sparse import SparseEncoder, SparseVec
from project_ledger.search.tuning import CODE_BM25_AVG_LEN, CODE_TEST_PENALTY, FusionParams
from project_ledger.worker import Opening, RunAgain, Worker

log = logging.getLogger(__name__)

# `within`: the symbol's file and every directory above it, so one condition restricts to a file or a folder.
# Indexed: the fields `code_filter` filters on (`kind` stays in the payload; see `MEMORY_PAYLOAD` for the cost of an index).
CODE_PAYLOAD: dict[str, PayloadType] = {"language": "keyword", "within": "keyword"}
EMBED_BATCH = 128  # sorted by length within a round: 11% fewer CPU seconds than rounds of 32 (rich symbols)
NAMED_PER_NAME = 5  # symbols a name may put first; a more common name keeps only those ranked anyway
REVISIONS_PER_STEP = 16
# Points built and upserted at a time in a catch-up: a first scan's revisions hold every symbol of the tree, and
# django's 44k symbols as points at once held 33 MB of BM25 vectors in Python objects.
UPSERT_CHUNK = 1000
POLL_SECONDS = 1.0
RETRY_OPEN_SECONDS = 30.0


@dataclass(frozen=True)
class SymbolDoc:
    seq: int
    sparse: SparseVec
    vector: list[float] | None
    path: str
    language: str
    kind: str

    def payload(self) -> dict[str, Any]:
        parts = self.path.split("/")
        return {"language": self.language, "within": ["/".join(parts[: i + 1]) for i in range(len(parts))], "kind": self.kind}


def search_text(symbol: StoredSymbol) -> str:
    """What BM25 sees: the embedded text plus the path, whose parts the code tokenizer splits."""
    return f"{symbol.embed_text()}\n{symbol.path}"


def code_filter(language: str | None, path: str | None) -> list[Match]:
    where: list[Match] = []
    if language:
        where.append(Match("language", (language,)))
    if path:
        where.append(Match("within", (path.rstrip("/"),)))
    return where


class CodeSearch:
    """The symbol shard, caught up with the code tables by a worker thread that also embeds."""

    def __init__(self, store: CodeStore, open_index: Callable[[], SearchIndex], embedder: Embedder) -> None:
        self._store = store
        self._open_index = open_index
        self._embedder = embedder
        self._encoder: SparseEncoder | None = None
        self._index: SearchIndex | None = None
        self._lock = threading.Lock()
        self._pending: tuple[int, int] | None = None  # (code revision, symbols without a vector then)
        self._texts_current = False  # the store's embed hashes are those of today's texts (`_current_texts`)
        self._worker = Worker(
            "ledger-code-search",
            [self._step],
            poll_seconds=POLL_SECONDS,
            opening=Opening(
                open=self._open, close=self._close, what="open the code search index", retry_seconds=RETRY_OPEN_SECONDS
            ),
        )

    def start(self) -> None:
        self._worker.start()

    def stop(self) -> None:
        self._worker.stop(timeout=30)

    def kick(self) -> None:
        self._worker.wake()

    @property
    def is_open(self) -> bool:
        return self._worker.wait_opened(0) and self._index is not None

    def open_now(self) -> None:
        """Open and catch up in the calling thread (the CLI's way); a failure is reported by `search`."""
        self._worker.open_now()

    def _open(self) -> None:
        with self._lock:
            self._current_texts()
            self._encoder = SparseEncoder(avg_len=CODE_BM25_AVG_LEN)
            self._index = self._open_index()
            self._verify(self._index)

    def _current_texts(self) -> None:
        """Re-hash symbols stored under an earlier text version (`CodeStore.refresh_texts`), once per process, before
        anything embeds the symbols without a vector or indexes them: else each vector, stored under its new text's
        hash, would leave its symbol still missing one, and embedding would never end."""
        if not self._texts_current:
            self._store.refresh_texts()
            self._texts_current = True

    def _close(self) -> None:
        """Give the index's slot back: after a failed open, before the retry, and at stop."""
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None

    def _step(self) -> RunAgain | None:
        """Catch up, then embed one batch; with more to embed, the next round follows at once."""
        with self._lock:
            self._catch_up()
        return RunAgain() if self.embed_some() else None

    def _verify(self, index: SearchIndex) -> None:
        """Rebuild an index that is ahead of the tables (a new journal) or holds the wrong number of points."""
        if index.watermark() > self._store.rev():
            index.reset(0)
        self._catch_up()
        rev, expected = self._store.rev_and_count()
        if rev == index.watermark() and index.count() != expected:
            log.warning("code search index held %d points for %d symbols: rebuilt", index.count(), expected)
            index.reset(0)
            self._catch_up()

    def _catch_up(self) -> None:
        """Apply what the code tables changed since the watermark. The caller holds `self._lock`."""
        index, encoder = self._index, self._encoder
        assert index is not None and encoder is not None
        applied = 0
        while True:
            changes, removed, top = self._store.changes_since(index.watermark(), self._embedder.identity, REVISIONS_PER_STEP)
            if top == index.watermark():
                break
            index.delete(removed)
            for start in range(0, len(changes), UPSERT_CHUNK):
                index.upsert([_doc(change, encoder) for change in changes[start : start + UPSERT_CHUNK]])
            index.set_watermark(top)
            applied += len(changes) + len(removed)
        if applied >= UPSERT_CHUNK:
            # A scan's rows and points were freed, but malloc keeps their pages until told (36 MB right after
            # django's scan); an edit's few rows are not worth the heap walk.
            release_freed_memory()
        for event in index.events:  # held in memory on a full disk, or written back: logged, not kept
            log.warning("code search index: %s", event)
        index.events.clear()

    def embed_all(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every symbol that has no vector yet, now, in this thread (the CLI's way; a server does it in the
        background). `progress(done, total)` follows each batch. Returns how many."""
        self._current_texts()  # re-hashed once here, not also counted by hashing every text (`pending_vectors`)
        total, done = self.pending_vectors(), 0
        while batch := self.embed_some():
            done += batch
            if progress is not None:
                progress(done, total)
        return done

    def embed_some(self) -> int:
        """Embed one batch of symbols that have no vector yet; how many (0: none left, or no model)."""
        if isinstance(self._embedder, CodeEmbedder):
            self._embedder.settle(lambda: self._store.rev_and_count()[1] > 0)  # the code model, once there is code
        if self._embedder.state != "ready":
            return 0
        self._current_texts()
        pending = self._store.missing_vectors(self._embedder.identity, EMBED_BATCH)
        if not pending:
            return 0
        texts = [symbol.embed_text() for symbol in pending]
        hashes = [embed_hash(text) for text in texts]
        vectors = self._embedder.embed_documents(texts)
        self._store.store_vectors(
            self._embedder.identity,
            [(symbol.id, text_hash, to_bytes(vector)) for symbol, text_hash, vector in zip(pending, hashes, vectors, strict=True)],
        )
        return len(pending)

    def _ready_index(self) -> SearchIndex:
        if not self._worker.wait_opened(30):
            raise IndexUnavailable("the code search index is still opening; retry in a few seconds")
        if self._index is None:
            raise IndexUnavailable(f"the code search index could not be opened ({self.error}); find_symbol still works")
        return self._index

    def search(
        self, query: str, *, language: str | None, path: str | None, k: int, fusion: FusionParams
    ) -> list[tuple[StoredSymbol, float, float]]:
        """The best `k` symbols, each with its fused score and its relevance (see `fusion.relevance`).

        Symbols the query names (`named_symbols`) come first, with relevance 1 and the best fused score; the
        ranked ones follow, those in test files CODE_TEST_PENALTY lower unless the query mentions tests."""
        index = self._ready_index()
        dense = None
        if self._embedder.state == "ready":
            dense = [float(x) for x in self._embedder.embed_query(query)]
        with self._lock:
            self._catch_up()
            encoder = self._encoder
            assert encoder is not None
            terms = encoder.query(query)
            asked = max(k, fusion.candidates)
            found: Candidates = index.candidates(dense, terms, code_filter(language, path), asked)
        ranked = fuse(found, fusion, len(found.dense) + len(found.sparse), asked)
        symbols = self._store.symbols_by_ids([hit.seq for hit in ranked])
        if not asks_about_tests(query):
            tests = {seq for seq, symbol in symbols.items() if is_test_file(symbol.path)}
            ranked = shifted(ranked, tests, -CODE_TEST_PENALTY)
        named = self.named_symbols(query, language=language, path=path, ranked=[hit.seq for hit in ranked])[:k]
        pinned = {symbol.id for symbol in named}
        hits = [hit for hit in ranked if hit.seq not in pinned][: k - len(named)]
        dense_scores = {hit.seq: hit.score for hit in found.dense}
        top = ranked[0].score if ranked else 1.0
        return [(symbol, top, 1.0) for symbol in named] + [
            (symbol, hit.score, relevance(dense_scores.get(hit.seq), coverage(terms, encoder.document(search_text(symbol)))))
            for hit in hits
            if (symbol := symbols.get(hit.seq)) is not None
        ]

    def named_symbols(self, query: str, *, language: str | None, path: str | None, ranked: Sequence[int]) -> list[StoredSymbol]:
        """The symbols `query` asks for by name (`naming.names_asked`), in the order it names them.

        Each name answers with its most specific spelling that matches (`naming.spellings`). Only the ranked
        candidates (`ranked`, ids best first) are kept for a name that matches more than NAMED_PER_NAME symbols
        (`get`, `__init__`), and for a name in passing (a snake_case one inside a longer question): putting
        every such mention first cost 0.01-0.02 of docstring-to-symbol MRR@10 (`benchmarks/code_search.py`)."""
        filters, values = scope(language, path)
        place = {seq: i for i, seq in enumerate(ranked)}
        found: dict[int, StoredSymbol] = {}
        for name, in_passing in names_asked(query):
            for spelling in spellings(name):
                condition, params = named(spelling)
                where, args = " AND ".join([condition, *filters]), [*params, *values]
                matches = self._store.symbols(where, args, NAMED_PER_NAME + 1)
                if len(matches) > NAMED_PER_NAME or in_passing:
                    among = f"id IN ({','.join('?' * len(place))})"
                    matches = self._store.symbols(f"{where} AND {among}", [*args, *place], len(place)) if place else []
                if matches:
                    for symbol in sorted(matches, key=lambda s: place.get(s.id, len(place))):
                        found.setdefault(symbol.id, symbol)
                    break
        return list(found.values())

    def load_model(self) -> bool:
        """Load the model in the calling thread (the CLI's way); False if it cannot be loaded."""
        return self._embedder.load()

    @property
    def model(self) -> str:
        """The identity the symbols' vectors are stored and indexed under."""
        return self._embedder.identity

    def embedder_ready(self) -> bool:
        return self._embedder.state == "ready"

    def embedder_failure(self) -> str | None:
        """Why the model could not be loaded; None while it loads or is loaded."""
        return self._embedder.detail if self._embedder.state == "failed" else None

    def pending_vectors(self) -> int:
        """Symbols without a vector. Counting takes tens of milliseconds on a large tree, and every
        search_code and status asks, so the count is kept until the code tables next change. It writes nothing
        (a status must not): texts of an earlier version are counted as `embed_some` will see them once re-hashed."""
        rev = self._store.rev()
        if self._pending is None or self._pending[0] != rev:
            self._pending = (rev, self._store.count_missing_vectors(self._embedder.identity))
        return self._pending[1]

    def lag(self) -> int | None:
        index = self._index
        return None if index is None else self._store.rev() - index.watermark()

    @property
    def error(self) -> str | None:
        """Why the index could not be opened; None once open."""
        return self._worker.open_error


def _doc(change: SymbolChange, encoder: SparseEncoder) -> SymbolDoc:
    symbol = change.symbol
    return SymbolDoc(
        seq=symbol.id,
        sparse=encoder.document(search_text(symbol)),
        vector=from_bytes(change.vector) if change.vector is not None else None,
        path=symbol.path,
        language=symbol.language,
        kind=symbol.kind,
    )
