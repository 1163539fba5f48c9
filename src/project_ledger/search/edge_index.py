"""The embedded backend: a Qdrant Edge shard inside the data directory.

A shard can be open in one process only, yet several server processes (and the
CLI) may work on one project at once. So each process takes the first free
*slot*: `index/edge-<n>/`, guarded by an exclusive lock on `index/edge-<n>.lock`.
A slot keeps its shard (in a `shard-<id>/` folder) and a `state.json` with
the journal revision it reflects; whichever process opens it next catches it up from the journal, which
also holds the dense vectors, so catching up never re-runs the model.

The engine writes through memory maps, where a full disk is not an error but SIGBUS, which kills the process;
loading a shard writes too (it maps its payload indexes' files whole, for writing). So before each write the
index checks the free space against what that write can take (`write_bytes`, `load_bytes`, `create_bytes`,
measured by `benchmarks/index_disk.py`). Without it, the index is *held in memory* (`RamIndex`): every point
is copied there (or, when the shard could not be loaded, caught up into it from the journal), searches answer
from it, complete and current, and the shard is written again, with what changed meanwhile, once there is room.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from project_ledger.file_lock import FileLock
from project_ledger.search.index import (
    DENSE,
    SPARSE,
    Candidates,
    DiskNearlyFull,
    Hit,
    Indexable,
    IndexState,
    Match,
    PayloadType,
    SlotState,
)
from project_ledger.search.process_memory import release_mapped_pages
from project_ledger.search.sparse import SparseVec

if TYPE_CHECKING:  # loaded when the disk runs short: numpy stays off the import path of `serve`
    from project_ledger.search.ram_index import RamIndex

MAX_SLOTS = 32
PERSIST_SECONDS = 1.0  # at most one flush of the shard per second: a flush costs ~30 ms, and every write catches up
# Free space a write of the shard needs, from `benchmarks/index_disk.py` (README, "Low disk space"). A point takes
# about its float16 vector, 8 bytes per BM25 term, its payload and 300 bytes of the engine's own: each is counted
# twice. Loading a shard maps its payload indexes' files whole for writing: their holes are allocated then. A new
# shard writes two 1 MiB flag files per indexed payload field at once, and a few small files. SLACK_BYTES covers
# the rest: a flush (at most 0.15 MB measured), the state file, and a new page in each file a write touches.
SLACK_BYTES = 2 * 2**20
POINT_OVERHEAD_BYTES = 512
CREATE_BYTES_PER_FIELD = 2 * 2**20 + 64 * 2**10
RESUME_CHECK_SECONDS = 1.0  # while held in memory, free space is looked at no more often than this
# After this many points written, a flush also hands the written pages of the shard's files back
# (`release_mapped_pages`): 15 MB after catching up 10,000 memories (the vectors count twice: mapped to write and to
# read), which searches read again as they need; an edit's few points are not worth a walk of the mappings.
RELEASE_AFTER_POINTS = 1000


def point_bytes(point: Indexable) -> int:
    """What writing `point` can allocate on disk, counted twice over (see SLACK_BYTES for the measurements)."""
    dense = 2 * len(point.vector) if point.vector is not None else 0  # stored as float16
    payload = len(json.dumps(point.payload(), ensure_ascii=False).encode())
    return 2 * (dense + 8 * len(point.sparse.indices) + payload + POINT_OVERHEAD_BYTES)


def write_bytes(points: Sequence[Indexable]) -> int:
    """Free space needed before writing `points` to a shard and flushing it."""
    return SLACK_BYTES + sum(point_bytes(point) for point in points)


def load_bytes(shard_dir: Path) -> int:
    """Free space needed before loading the shard in `shard_dir`: the holes of the payload index files, which
    loading allocates, and the slack for its first flush."""
    holes = 0
    for path in shard_dir.rglob("*"):
        if "payload_index" in path.parts and path.is_file():
            stat = path.stat()
            holes += max(0, stat.st_size - stat.st_blocks * 512)
    return SLACK_BYTES + holes


def create_bytes(payload: dict[str, PayloadType]) -> int:
    """Free space needed before creating an empty shard with these indexed payload fields."""
    return SLACK_BYTES + CREATE_BYTES_PER_FIELD * len(payload)


def room_needed(index_dir: Path, payload: dict[str, PayloadType], prefix: str = "edge") -> int:
    """Free space the first slot's shard needs to be loaded (or created) and written: below it, a process that opens
    the index holds it in memory (`doctor` reports this)."""
    slot = index_dir / f"{prefix}-0"
    try:
        shard = json.loads((slot / "state.json").read_text())["shard"]
    except (OSError, ValueError, KeyError, TypeError):
        return create_bytes(payload)
    return load_bytes(slot / shard) if (slot / shard).is_dir() else create_bytes(payload)


def _free_bytes(folder: Path) -> int:
    return shutil.disk_usage(folder).free


@dataclass
class _Held:
    """The index while it is held in memory: what its state file would say, and what the shard lacks."""

    ram: RamIndex
    epoch: int
    watermark: int
    forgets: int
    whole: bool  # the shard holds none of it (it could not be loaded or created, or was reset): written back whole
    changed: set[int] = field(default_factory=set)  # else: the points upserted or deleted since it was copied


def _free_slot(index_dir: Path, prefix: str) -> tuple[Path, FileLock] | None:
    """The first slot `<prefix>-<n>` no other process holds, and its lock; None when all are held."""
    for n in range(MAX_SLOTS):
        lock = FileLock.try_acquire(index_dir / f"{prefix}-{n}.lock")
        if lock is not None:
            return index_dir / f"{prefix}-{n}", lock
    return None


class EdgeIndex:
    """One shard in one folder (`slot`): `shard/` plus `state.json`."""

    backend = "qdrant-edge"

    def __init__(
        self,
        slot: Path,
        dim: int,
        embedder_identity: str,
        payload: dict[str, PayloadType],
        lock: FileLock | None = None,
        may_hold: bool = True,
    ) -> None:
        """`may_hold`: without room on the disk, hold the index in memory; else raise `DiskNearlyFull` (a compaction,
        whose only product is the shard)."""
        import qdrant_edge

        self._q = qdrant_edge
        self._dim = dim
        self._payload = payload
        self._lock = lock
        self.events: list[str] = []
        self.location = str(slot)
        self._slot = slot
        self._state = IndexState(slot / "state.json", embedder_identity)
        # As if flushed at open: a short-lived process (a CLI command, a hook) then flushes once, when it closes,
        # and not at all if it wrote nothing (a flush costs a sync to disk even then).
        self._persisted_at = time.monotonic()
        self._unsaved = False  # shard writes or a watermark since the last flush
        self._written = 0  # points upserted or deleted since the shard's mapped pages were last released
        self._shard: Any = None
        self._may_hold = may_hold
        self._held: _Held | None = None
        self._checked_at = 0.0  # when a held index last looked for room to go back to disk
        slot.mkdir(parents=True, exist_ok=True)
        self._open()

    @classmethod
    def open_slot(
        cls, index_dir: Path, dim: int, embedder_identity: str, payload: dict[str, PayloadType], prefix: str = "edge"
    ) -> EdgeIndex:
        """The first slot `<prefix>-<n>` no other process holds, locked for this process's lifetime."""
        index_dir.mkdir(parents=True, exist_ok=True)
        free = _free_slot(index_dir, prefix)
        if free is None:
            raise RuntimeError(f"all {MAX_SLOTS} index slots in {index_dir} are in use by other processes")
        slot, lock = free
        try:
            return cls(slot, dim, embedder_identity, payload, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def read_slot(cls, index_dir: Path, embedder_identity: str, prefix: str = "edge") -> SlotState | None:
        """What a slot recorded when it was last written, without loading its shard or taking a new slot (a command
        that only reports, such as the CLI's `status`, then neither creates, loads, catches up nor flushes one).

        The first existing slot that no other process holds and that can tell, as `open_slot` would take it; else,
        when each of those is held (a running server's) or cannot tell, the one that recorded the newest epoch and revision
        (a slot being rebuilt starts its epoch at revision 0, ahead of a stale slot of the epoch before).
        Another process replaces its state file whole, so it reads consistently without its lock. None when no slot
        can tell: none exists, or each state file is unreadable, for another model, written before it recorded its
        point count, or names a shard folder that is gone.
        """
        recorded: list[SlotState] = []
        for n in range(MAX_SLOTS):
            slot = index_dir / f"{prefix}-{n}"
            if not slot.is_dir():  # never written: it records nothing, and taking its lock would create a file
                continue
            lock = FileLock.try_acquire(index_dir / f"{prefix}-{n}.lock")
            try:
                state = IndexState(slot / "state.json", embedder_identity)
                if state.load() and state.points >= 0 and (slot / state.shard).is_dir():
                    found = SlotState(cls.backend, str(slot), state.epoch, state.watermark, state.points)
                    if lock is not None:
                        return found
                    recorded.append(found)
            finally:
                if lock is not None:
                    lock.release()
        return max(recorded, key=lambda state: (state.epoch, state.watermark), default=None)

    def _open(self) -> None:
        if not self._state.load():
            if any(self._slot.glob("shard*")):
                self.events.append(
                    f"index state in {self.location} unreadable, for another model or an older index format: rebuilt from the journal"
                )
            self._create(epoch=0)
            return
        shard_dir = self._slot / self._state.shard
        if not shard_dir.is_dir():
            self.events.append(f"index folder {shard_dir} was missing: rebuilt from the journal")
            self._create(self._state.epoch)
            return
        if not self._has_room(load_bytes(shard_dir), "load the index"):
            return
        try:
            self._shard = self._q.EdgeShard.load(str(shard_dir))
            self._shard.info()
        except BaseException as exc:  # a damaged shard is only a cache of the journal
            # The engine reports some damage (an emptied storage file) as a Rust panic, which Python raises as a
            # BaseException: it is rebuilt like any other damage. An interrupt is not damage.
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            self.events.append(f"index in {shard_dir} was unreadable ({exc}): rebuilt from the journal")
            self._create(self._state.epoch)
            return
        self._remove_leftovers()
        # Loading made each payload index's files resident whole (3-6 MB apiece, 10 MB for an empty code shard's two),
        # and nothing reads them again but a write's few pages: 35 MB at 10,000 memories, handed back here.
        release_mapped_pages(shard_dir)

    def _create(self, epoch: int) -> None:
        """A new, empty shard in a new folder; the state file switches to it, then the old folder goes. Without room
        for it, the index is held in memory, empty."""
        if self._has_room(create_bytes(self._payload), "create the index", copy=False):
            self._make_shard(epoch)
        else:
            self._hold_empty(epoch)

    def _make_shard(self, epoch: int) -> None:
        q = self._q
        if self._shard is not None:
            self._shard.close()
            self._shard = None
        name = f"shard-{secrets.token_hex(4)}"
        # No write-ahead log: the journal is this index's log. The state file records a revision only after a
        # flush (`_persist`), and whatever came after it is applied again from the journal, so a second log only
        # cost memory (its pages stay mapped, 24 MB after catching up 10,000 memories) and writes.
        # Dense vectors `Cold`: paged in as searches read them, not all loaded at open (the default, `Cached`, kept
        # the whole 32 MB chunk file resident for 15 MB of vectors at 10,000 points); Cold or not, the scores are the same.
        # Stored as float16: half the bytes, mapped twice by the engine (to write and to read), so 15 MB less resident
        # at 10,000 memories. The vectors come from int8 products; the rounding moved no ranking measured (README).
        config = q.EdgeConfig(
            vectors={
                DENSE: q.EdgeVectorParams(
                    size=self._dim, distance=q.Distance.Cosine, memory=q.Memory.Cold, datatype=q.VectorStorageDatatype.Float16
                )
            },
            sparse_vectors={SPARSE: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf)},
            wal_enabled=False,
        )
        self._shard = q.EdgeShard.create(str(self._slot / name), config)
        schema = {
            "keyword": q.PayloadSchemaType.Keyword,
            # Integer fields are flags matched by value (`superseded`): no range half, which held 1.2 MB at 10,000
            # points. A shard made before keeps both halves until it is next rebuilt; they answer the same.
            "integer": q.IntegerIndexParams(lookup=True, range=False),
            "float": q.PayloadSchemaType.Float,
        }
        for field_name, kind in self._payload.items():
            self._shard.update(q.UpdateOperation.create_field_index(field_name, schema[kind]))
        self._unsaved = True
        self._state.epoch, self._state.watermark, self._state.shard, self._state.optimized = epoch, 0, name, 0
        self._state.points = 0
        self._state.save()
        self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        """Shard folders the state no longer points to: replaced, or left by a crash mid-swap."""
        for path in self._slot.iterdir():
            if path.is_dir() and path.name not in (self._state.shard, "compacted"):
                shutil.rmtree(path, ignore_errors=True)

    # -- room on the disk, and holding the index in memory without it ---------

    def _has_room(self, need: int, what: str, copy: bool = True) -> bool:
        """Whether the disk has `need` bytes free, for `what`. If not, the index is held in memory from now on, with a
        copy of the shard's points (or, without `copy` or a loaded shard, empty, from revision 0), or, where that is
        not allowed, `DiskNearlyFull` is raised."""
        free = _free_bytes(self._slot)
        if free >= need:
            return True
        detail = f"only {free / 2**20:.1f} MB free where the index is, and it needs {need / 2**20:.1f} MB to {what}"
        if not self._may_hold:
            raise DiskNearlyFull(f"{detail}; the journal is unaffected")
        if self._held is None:
            self._hold(whole=self._shard is None or not copy)
            self.events.append(
                f"index held in memory: {detail}; searches answer from memory, complete, and the index is written "
                "to disk again once there is room"
            )
        return False

    def _hold(self, whole: bool) -> None:
        """Hold the index in memory: a copy of every point the shard holds, or (`whole`) none, from revision 0."""
        from project_ledger.search.ram_index import RamIndex

        ram = RamIndex()
        if not whole:
            ram.upsert(list(self._stored_points()))
        state = self._state
        self._held = _Held(ram, state.epoch, 0 if whole else state.watermark, state.forgets, whole)

    def _held_index(self) -> _Held:
        assert self._held is not None
        return self._held

    def _hold_empty(self, epoch: int) -> None:
        """What a reset is while the index is held in memory: nothing held, revision 0 of `epoch`."""
        held = self._held_index()
        held.ram.clear()
        held.changed.clear()
        held.epoch, held.watermark, held.whole = epoch, 0, True

    def _stored_points(self) -> Iterator[Indexable]:
        from project_ledger.search.ram_index import HeldPoint

        q, offset = self._q, None
        while True:
            records, offset = self._shard.scroll(q.ScrollRequest(offset=offset, limit=1000, with_payload=True, with_vector=True))
            for record in records:
                vectors = record.vector or {}
                sparse = vectors.get(SPARSE)
                terms = SparseVec(list(sparse.indices), list(sparse.values)) if sparse is not None else SparseVec([], [])
                yield HeldPoint.of(int(record.id), terms, vectors.get(DENSE), record.payload or {})
            if offset is None:
                return

    def _write_back(self, force: bool = False) -> None:
        """Once there is room again (looked at no more than once a second unless `force`), write to the shard what
        changed while the index was held in memory, or all of it, and go back to disk."""
        held = self._held
        now = time.monotonic()
        if held is None or (not force and now - self._checked_at < RESUME_CHECK_SECONDS):
            return
        self._checked_at = now
        count = held.ram.count() if held.whole else len(held.changed)
        opening = create_bytes(self._payload) if held.whole else 0
        free = _free_bytes(self._slot)
        # Room for the next write too: else the first one after going back would hold the index again. What the
        # points need is counted only once the least they could need fits.
        if free < opening + 2 * SLACK_BYTES + 2 * POINT_OVERHEAD_BYTES * count:
            return
        points = list(held.ram.points(None if held.whole else sorted(held.changed)))
        gone = [] if held.whole else sorted(seq for seq in held.changed if not held.ram.holds(seq))
        if free < opening + write_bytes(points) + SLACK_BYTES:
            return
        if held.whole:
            self._make_shard(held.epoch)
            self._state.forgets = held.forgets  # a new shard holds none of the memories forgotten so far
        q = self._q
        for start in range(0, len(points), 1000):
            self._shard.update(q.UpdateOperation.upsert_points([self._point(p) for p in points[start : start + 1000]]))
        if gone:
            self._shard.update(q.UpdateOperation.delete_points(gone))
        self._held = None
        self._state.watermark = held.watermark
        self._unsaved = True
        self._written += len(points) + len(gone)
        self._persist()
        self.events.append(f"index written to disk again: {len(points) + len(gone)} points; no longer held in memory")

    # -- SearchIndex ---------------------------------------------------------

    @contextmanager
    def sync_lock(self) -> Iterator[None]:
        """Nothing to coordinate: this process holds the slot alone. A catch-up or search starting is when a held
        index looks for room to go back to disk."""
        self._write_back()
        yield

    def watermark(self) -> int:
        return self._held.watermark if self._held is not None else self._state.watermark

    def epoch(self) -> int:
        return self._held.epoch if self._held is not None else self._state.epoch

    def set_watermark(self, rev: int) -> None:
        """Recorded now, written to disk at most once a second (and on close).

        After a crash the state file may name an older revision than the shard
        holds; catching up then re-applies those changes, which is harmless
        (upserts and deletes by id). The reverse can never happen: `_persist`
        flushes the shard before it writes the state file.
        """
        if self._held is not None:
            self._held.watermark = rev
            self._write_back()
            return
        self._state.watermark = rev
        self._unsaved = True
        if time.monotonic() - self._persisted_at >= PERSIST_SECONDS:
            self._persist()

    def _persist(self) -> None:
        if self._held is not None or not self._has_room(SLACK_BYTES, "flush the index"):
            return  # the state file keeps the revision the shard holds on disk
        self._shard.flush()
        self._state.points = self.count()
        self._state.save()
        self._persisted_at = time.monotonic()
        self._unsaved = False
        if self._written >= RELEASE_AFTER_POINTS:
            release_mapped_pages(self._slot / self._state.shard)
            self._written = 0

    def _point(self, doc: Indexable) -> Any:
        q = self._q
        vectors: dict[str, Any] = {SPARSE: q.SparseVector(doc.sparse.indices, doc.sparse.values)}
        if doc.vector is not None:
            vectors[DENSE] = doc.vector
        return q.Point(doc.seq, vectors, doc.payload())

    def upsert(self, docs: Sequence[Indexable]) -> None:
        if not docs:
            return
        if self._held is None and self._has_room(write_bytes(docs), "write the index"):
            self._shard.update(self._q.UpdateOperation.upsert_points([self._point(doc) for doc in docs]))
            self._unsaved = True
            self._written += len(docs)
            return
        held = self._held_index()
        held.ram.upsert(docs)
        held.changed.update(doc.seq for doc in docs)

    def delete(self, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        if self._held is None and self._has_room(SLACK_BYTES, "write the index"):
            self._shard.update(self._q.UpdateOperation.delete_points(list(seqs)))
            self._unsaved = True
            self._written += len(seqs)
            return
        held = self._held_index()
        held.ram.delete(seqs)
        held.changed.update(seqs)

    def _filter(self, where: Sequence[Match]) -> Any:
        q = self._q
        must: list[Any] = []
        for match in where:
            if match.is_range:
                must.append(q.FieldCondition(match.field, range=q.RangeFloat(gte=match.at_least, lte=match.at_most)))
            elif len(match.any_of) == 1:
                must.append(q.FieldCondition(match.field, match=q.MatchValue(match.any_of[0])))
            else:
                must.append(q.FieldCondition(match.field, match=q.MatchAny(list(match.any_of))))
        return q.Filter(must=must) if must else None

    def candidates(self, dense: list[float] | None, sparse: SparseVec, where: Sequence[Match], limit: int) -> Candidates:
        if self._held is not None:
            return self._held.ram.candidates(dense, sparse, where, limit)
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
        if self._held is not None:
            return self._held.ram.count()
        return int(self._shard.count(self._q.CountRequest(exact=True)))

    @property
    def held_in_memory(self) -> bool:
        """Whether the disk lacks room for the shard's writes, so that the index is held in memory."""
        return self._held is not None

    def reset(self, epoch: int) -> None:
        if self._held is None:
            self._create(epoch)
        else:  # the shard is made again when the index goes back to disk
            self._hold_empty(epoch)

    def compaction_target(self) -> Path:
        return self._slot / "compacted"

    def erased_through(self) -> int:
        return self._held.forgets if self._held is not None else self._state.forgets

    def set_erased_through(self, forgets: int) -> None:
        if self._held is not None:
            self._held.forgets = forgets
            return
        self._state.forgets = forgets
        self._persist()

    def has_graphs(self) -> bool:
        """True while at most a fifth of the points arrived after the graphs were built."""
        return self._state.optimized > 0 and self.count() <= 1.25 * self._state.optimized

    def optimize(self) -> None:
        """Build the HNSW graphs and drop deleted points' data. Holds the GIL for minutes at 100k: run it in a child process."""
        self._shard.optimize()
        self._shard.flush()
        self._state.optimized = self._state.points = self.count()
        self._state.save()

    def replace_with(self, built: Path, drop_idle_copies: bool) -> None:
        """Swap in an index built and optimized elsewhere (see `project_ledger.storage.compaction`); the old one is deleted.

        The built folder holds a shard folder and a state file naming it. The
        shard folder moves into this slot, then replacing the state file switches
        over in one step: a crash before it keeps the old index, after it the new
        one. With `drop_idle_copies`, slots no process holds are deleted too, as
        they may still hold a forgotten memory's vectors; the next process to
        start rebuilds its slot from the journal.
        """
        if self._held is not None:  # started before the disk ran short; erasing runs again once the index is back
            shutil.rmtree(built, ignore_errors=True)
            self.events.append("a compaction's result was set aside: the index is held in memory")
            return
        incoming = IndexState(built / "state.json", self._state.embedder)
        if not incoming.load():
            raise RuntimeError(f"{built} holds no usable index state")
        self._shard.close()
        self._shard = None
        try:
            (built / incoming.shard).rename(self._slot / incoming.shard)
            os.replace(incoming.path, self._state.path)
        finally:
            self._open()  # whichever index the state file now names
            shutil.rmtree(built, ignore_errors=True)
        if drop_idle_copies:
            self._drop_idle_slots()

    def _drop_idle_slots(self) -> None:
        prefix = self._slot.name.rsplit("-", 1)[0]
        for lock_path in self._slot.parent.glob(f"{prefix}-*.lock"):
            slot = lock_path.with_suffix("")
            if slot == self._slot:
                continue
            lock = FileLock.try_acquire(lock_path)
            if lock is not None:
                try:
                    shutil.rmtree(slot, ignore_errors=True)
                finally:
                    lock.release()

    def close(self) -> None:
        """Closing flushes the shard (the engine documents it), so the state file is written after it, as `_persist`
        writes it after a flush: one flush, not two, which is most of a short-lived CLI command's close. A held
        index is written back first if there is room; a shard with no room to flush is left unclosed, and its
        state file keeps the revision it holds on disk, from which the next open catches up."""
        try:
            self._write_back(force=True)
            # A state file from before it recorded the point count gets one too, so `read_slot` can use it next time.
            save = self._unsaved or self._state.points < 0
            if self._held is None and self._shard is not None and (not self._unsaved or _free_bytes(self._slot) >= SLACK_BYTES):
                if save:
                    self._state.points = self.count()
                self._shard.close()
                if save:
                    self._state.save()
                    self._unsaved = False
        finally:
            if self._lock is not None:
                self._lock.release()
