"""The embedded backend: a Qdrant Edge shard inside the data directory.

A shard can be open in one process only, yet several server processes (and the
CLI) may work on one project at once. So each process takes the first free
*slot*: `index/edge-<n>/`, guarded by an exclusive lock on `index/edge-<n>.lock`.
A slot keeps its shard and a `state.json` with the journal revision it
reflects; whichever process opens it next catches it up from the journal, which
also holds the dense vectors, so catching up never re-runs the model.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .file_lock import FileLock
from .memory_index import (
    DENSE,
    PAYLOAD_INDEXES,
    SPARSE,
    Candidates,
    Hit,
    IndexDoc,
    IndexState,
    SearchFilter,
    SparseVec,
)

MAX_SLOTS = 32


class EdgeIndex:
    backend = "qdrant-edge"

    def __init__(self, index_dir: Path, dim: int, embedder_identity: str) -> None:
        import qdrant_edge

        self._q = qdrant_edge
        self._dim = dim
        self.events: list[str] = []
        index_dir.mkdir(parents=True, exist_ok=True)
        self._lock, slot = self._take_slot(index_dir)
        self.location = str(slot)
        self._shard_dir = slot / "shard"
        self._state = IndexState(slot / "state.json", embedder_identity)
        self._shard: Any = None
        try:
            self._open()
        except BaseException:
            self._lock.release()
            raise

    @staticmethod
    def _take_slot(index_dir: Path) -> tuple[FileLock, Path]:
        for n in range(MAX_SLOTS):
            lock = FileLock.try_acquire(index_dir / f"edge-{n}.lock")
            if lock is not None:
                slot = index_dir / f"edge-{n}"
                slot.mkdir(exist_ok=True)
                return lock, slot
        raise RuntimeError(f"all {MAX_SLOTS} index slots in {index_dir} are in use by other processes")

    def _open(self) -> None:
        if not self._state.load():
            if self._shard_dir.exists():
                self.events.append(f"index state in {self.location} unreadable or for another model: rebuilt from the journal")
            self._create(epoch=0)
            return
        if not self._shard_dir.exists():
            self.events.append(f"index folder {self._shard_dir} was missing: rebuilt from the journal")
            self._create(self._state.epoch)
            return
        try:
            self._shard = self._q.EdgeShard.load(str(self._shard_dir))
            self._shard.info()
        except Exception as exc:  # a damaged shard is only a cache of the journal
            self.events.append(f"index in {self._shard_dir} was unreadable ({exc}): rebuilt from the journal")
            self._create(self._state.epoch)

    def _create(self, epoch: int) -> None:
        q = self._q
        if self._shard is not None:
            self._shard.close()
        shutil.rmtree(self._shard_dir, ignore_errors=True)
        self._shard_dir.mkdir(parents=True)
        config = q.EdgeConfig(
            vectors={DENSE: q.EdgeVectorParams(size=self._dim, distance=q.Distance.Cosine)},
            sparse_vectors={SPARSE: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf)},
        )
        self._shard = q.EdgeShard.create(str(self._shard_dir), config)
        schema = {
            "keyword": q.PayloadSchemaType.Keyword,
            "integer": q.PayloadSchemaType.Integer,
            "float": q.PayloadSchemaType.Float,
        }
        for name, kind in PAYLOAD_INDEXES.items():
            self._shard.update(q.UpdateOperation.create_field_index(name, schema[kind]))
        self._state.epoch, self._state.watermark = epoch, 0
        self._state.save()

    # -- MemoryIndex ---------------------------------------------------------

    @contextmanager
    def sync_lock(self) -> Iterator[None]:
        """Nothing to coordinate: this process holds the slot alone."""
        yield

    def watermark(self) -> int:
        return self._state.watermark

    def epoch(self) -> int:
        return self._state.epoch

    def set_watermark(self, rev: int) -> None:
        """Flush first: the state file must never claim more than the shard holds."""
        self._shard.flush()
        self._state.watermark = rev
        self._state.save()

    def upsert(self, docs: Sequence[IndexDoc]) -> None:
        q = self._q
        points = []
        for doc in docs:
            vectors: dict[str, Any] = {SPARSE: q.SparseVector(doc.sparse.indices, doc.sparse.values)}
            if doc.vector is not None:
                vectors[DENSE] = doc.vector
            points.append(q.Point(doc.seq, vectors, doc.payload()))
        if points:
            self._shard.update(q.UpdateOperation.upsert_points(points))

    def delete(self, seqs: Sequence[int]) -> None:
        if seqs:
            self._shard.update(self._q.UpdateOperation.delete_points(list(seqs)))

    def _filter(self, where: SearchFilter) -> Any:
        q = self._q
        must: list[Any] = []
        if where.kinds:
            must.append(q.FieldCondition("kind", match=q.MatchAny(list(where.kinds))))
        if where.tags:
            must.append(q.FieldCondition("tags", match=q.MatchAny(list(where.tags))))
        if where.session is not None:
            must.append(q.FieldCondition("session", match=q.MatchValue(where.session)))
        if where.since is not None:
            must.append(q.FieldCondition("created", range=q.RangeFloat(gte=where.since)))
        must_not = [] if where.include_superseded else [q.FieldCondition("superseded", match=q.MatchValue(1))]
        return q.Filter(must=must or None, must_not=must_not or None)

    def candidates(self, dense: list[float] | None, sparse: SparseVec, where: SearchFilter, limit: int) -> Candidates:
        q = self._q
        flt = self._filter(where)
        requests = [
            q.QueryRequest(
                limit=limit,
                query=q.Query.Nearest(q.SparseVector(sparse.indices, sparse.values), using=SPARSE),
                filter=flt,
                with_payload=False,
            )
        ]
        if dense is not None:
            requests.append(q.QueryRequest(limit=limit, query=q.Query.Nearest(dense, using=DENSE), filter=flt, with_payload=False))
        answers = self._shard.query_batch(q.QueryBatchRequest(requests))
        by_terms, *by_meaning = ([Hit(int(p.id), float(p.score)) for p in answer] for answer in answers)
        return Candidates(dense=by_meaning[0] if by_meaning else [], sparse=by_terms)

    def count(self) -> int:
        return int(self._shard.count(self._q.CountRequest(exact=True)))

    def reset(self, epoch: int) -> None:
        self._create(epoch)

    def close(self) -> None:
        try:
            self._shard.flush()
            self._shard.close()
        finally:
            self._lock.release()
