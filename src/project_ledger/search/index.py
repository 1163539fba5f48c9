"""The search index, as one small interface with two backends (Qdrant Edge embedded, qdrant-client).

A point has an integer id from the journal, a named dense vector (`dense`), a
BM25 sparse vector (`bm25`, IDF applied by the engine) and a payload with only
what filters need. Two kinds of points use it, each in its own shard or
collection: memories (`IndexDoc`) and code symbols (see `code/search.py`).
The text itself is never stored in the index: the journal holds it, so
`forget` has one place to scrub.

Both backends take sparse vectors from `sparse.SparseEncoder`, so they index the
same tokens, and `fusion` combines their two candidate lists, so they return the
same ranking.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from project_ledger.search.sparse import SparseVec

STATE_FORMAT = 4  # 2: BM25 vectors also hold whole identifiers (`sparse.whole_identifiers`); 3: shards without a WAL;
# 4: dense vectors stored as float16
DENSE = "dense"
SPARSE = "bm25"
PayloadType = Literal["keyword", "integer", "float"]
# The payload fields that get an index: the ones `SearchFilter.conditions` filters on. Each index costs the embedded
# shard memory and 3-5 MB of files that loading reads whole (then handed back: `EdgeIndex._open`), so a field no
# search filters on, such as `pinned`, is stored in the payload but not indexed. Flags are stored as 0/1 integers:
# qdrant-edge's bindings turn a Python bool in a match into an int; an integer field is matched by value only (the
# embedded index keeps no range index for it).
MEMORY_PAYLOAD: dict[str, PayloadType] = {
    "kind": "keyword",
    "tags": "keyword",
    "session": "keyword",
    "superseded": "integer",
    "created": "float",
}


class DiskNearlyFull(OSError):
    """A backend cannot write safely with the free space left; the caller retries once space is freed."""


@dataclass(frozen=True)
class Match:
    """One payload condition: `field` equals one of `any_of`, or lies within `at_least`..`at_most` (inclusive)."""

    field: str
    any_of: tuple[str | int, ...] = ()
    at_least: float | None = None
    at_most: float | None = None

    @property
    def is_range(self) -> bool:
        return self.at_least is not None or self.at_most is not None

    def holds(self, value: Any) -> bool:
        """Whether a payload's `value` meets the condition as the backends apply it (a list meets `any_of` when it
        shares a value with it)."""
        if self.is_range:
            return (self.at_least is None or value >= self.at_least) and (self.at_most is None or value <= self.at_most)
        if isinstance(value, list):
            return bool(set(value) & set(self.any_of))
        return value in self.any_of


class Indexable(Protocol):
    """What a backend needs of a point."""

    @property
    def seq(self) -> int: ...

    @property
    def sparse(self) -> SparseVec: ...

    @property
    def vector(self) -> list[float] | None: ...

    def payload(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class IndexDoc:
    """A memory as a point."""

    seq: int
    sparse: SparseVec
    vector: list[float] | None
    kind: str
    tags: list[str]
    session: str | None
    pinned: bool
    superseded: bool
    created: float

    def payload(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tags": self.tags,
            "session": self.session or "",
            "pinned": int(self.pinned),
            "superseded": int(self.superseded),
            "created": self.created,
        }


@dataclass(frozen=True)
class SearchFilter:
    kinds: list[str] | None = None
    tags: list[str] | None = None
    session: str | None = None
    since: float | None = None
    until: float | None = None
    include_superseded: bool = False

    def conditions(self) -> list[Match]:
        found: list[Match] = []
        if self.kinds:
            found.append(Match("kind", tuple(self.kinds)))
        if self.tags:
            found.append(Match("tags", tuple(self.tags)))
        if self.session is not None:
            found.append(Match("session", (self.session,)))
        if self.since is not None or self.until is not None:
            found.append(Match("created", at_least=self.since, at_most=self.until))
        if not self.include_superseded:
            found.append(Match("superseded", (0,)))
        return found

    def admits(self, payload: Mapping[str, Any]) -> bool:
        """Whether a point with this payload (`IndexDoc.payload`) passes the filter, checked outside the index."""
        return all(condition.holds(payload[condition.field]) for condition in self.conditions())


@dataclass(frozen=True)
class Hit:
    seq: int
    score: float


@dataclass(frozen=True)
class Candidates:
    """What one batched request returns: the best points by meaning and by BM25, each best first."""

    dense: list[Hit]
    sparse: list[Hit]


@dataclass
class IndexState:
    """What an index reflects, kept in a small JSON file written atomically.

    - `epoch`, `watermark`: the journal's reindex epoch and the revision applied.
    - `forgets`: the journal's forget count whose forgotten memories are absent
      from the index's files, not only from its results (embedded index only).
    - `shard`: the folder holding the data (embedded index only); replacing the
      state file is what switches to a new one.
    - `optimized`: how many points the index held when its search graphs were
      built (embedded index only; 0 for never). The engine's own count of
      indexed vectors mixes dense and sparse ones, so it cannot tell.
    - `points`: how many points the index held at `watermark` (embedded index
      only; -1 for not recorded), so that `SlotState` can tell without opening it.

    `load()` is False when the file is missing, unreadable or written for another
    embedding model or format: the index must then be rebuilt. `also_reads` names
    older formats whose change did not touch this backend, so it keeps them.
    """

    path: Path
    embedder: str
    epoch: int = 0
    watermark: int = 0
    forgets: int = 0
    shard: str = ""
    optimized: int = 0
    points: int = -1
    also_reads: tuple[int, ...] = ()

    def load(self) -> bool:
        try:
            data = json.loads(self.path.read_text())
            if data["format"] not in (STATE_FORMAT, *self.also_reads) or data["embedder"] != self.embedder:
                return False
            self.epoch, self.watermark, self.forgets = int(data["epoch"]), int(data["watermark"]), int(data["forgets"])
            self.shard, self.optimized = str(data["shard"]), int(data["optimized"])
            self.points = int(data.get("points", -1))  # written by this version on; older files lack it
        except (OSError, ValueError, KeyError, TypeError):
            return False
        return True

    def save(self) -> None:
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        data = {
            "format": STATE_FORMAT,
            "embedder": self.embedder,
            "epoch": self.epoch,
            "watermark": self.watermark,
            "forgets": self.forgets,
            "shard": self.shard,
            "optimized": self.optimized,
            "points": self.points,
        }
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.path)


@dataclass(frozen=True)
class SlotState:
    """What an index slot recorded when it was last written, read without opening it (see `EdgeIndex.read_slot`)."""

    backend: str
    location: str
    epoch: int
    watermark: int
    points: int


class SearchIndex(Protocol):
    """What the ledger needs from a search backend."""

    backend: str
    location: str
    events: list[str]  # what happened while opening: rebuilds, repairs

    def sync_lock(self) -> AbstractContextManager[None]:
        """Held while catching up, so that processes sharing one index apply changes in order."""
        ...

    def watermark(self) -> int:
        """The journal revision this index reflects."""
        ...

    def set_watermark(self, rev: int) -> None: ...

    def epoch(self) -> int:
        """The journal's reindex epoch this index was built in; a newer one means rebuild."""
        ...

    def upsert(self, docs: Sequence[Indexable]) -> None: ...

    def delete(self, seqs: Sequence[int]) -> None: ...

    def candidates(self, dense: list[float] | None, sparse: SparseVec, where: Sequence[Match], limit: int) -> Candidates:
        """The top `limit` by dense similarity (none when `dense` is None) and by BM25, in one request."""
        ...

    def count(self) -> int: ...

    def reset(self, epoch: int) -> None:
        """Drop every point: the index now reflects revision 0 of `epoch`."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Compactable(Protocol):
    """An index that can be rebuilt and optimized out of process, then swapped in (the embedded shard).

    Compaction builds search graphs, which a long-lived process cannot afford to
    do in-process, and is how deleted memories' vectors leave the disk.
    """

    def compaction_target(self) -> Path:
        """Where a child process should build the replacement."""
        ...

    def erased_through(self) -> int:
        """The journal forget count up to which forgotten memories are absent from the files."""
        ...

    def set_erased_through(self, forgets: int) -> None: ...

    def has_graphs(self) -> bool:
        """Whether most dense vectors are in a search graph (else every query scans them all)."""
        ...

    @property
    def held_in_memory(self) -> bool:
        """True while the disk has no room for the index's writes, so that it is held in memory (and not compacted)."""
        ...

    def replace_with(self, built: Path, drop_idle_copies: bool) -> None: ...
