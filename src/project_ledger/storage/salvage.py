"""Reading what can still be read of a damaged journal, into the export format.

A damaged page makes any statement that walks through it fail, so one
`SELECT` over a table stops at the first damage and an export gets nothing.
A lookup by rowid only walks from the root to the one leaf that holds the row:
it fails for the rows behind damaged pages and succeeds for the others. So the
memories are read one seq at a time. Which seqs to ask for comes from every
structure that still lists them: the table itself (scanned until it fails),
each of its indexes (which hold every rowid, read without the table's pages),
and the tables that refer to memories; every seq from 1 to the largest found
is asked for, since seqs are handed out in order. A memory's code links and
sources are read the same way, by seq.

Where SQL cannot reach a row (its leaf page is whole but a page above it is
not, or the schema itself is damaged or cut off), the file's pages are read
one by one (`sqlite_pages`) and the rows shaped like the memories table's are
taken; their links and sources cannot be told apart from other tables' rows
without the schema, and are counted as lost.

The file is opened read-only and never changed. What could not be read is
counted, never guessed: a seq whose lookup fails is one memory that may be
lost, and a file shorter than its header says may have held later ones.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from project_ledger.errors import StorageError
from project_ledger.models import KINDS
from project_ledger.storage.backup import FORMAT, VERSION, ExportedLink, ExportedMemory, ExportedSource, ExportHeader
from project_ledger.storage.journal.rows import row_to_memory
from project_ledger.storage.sqlite_pages import ScannedRow, scan

# Queries that list memories' seqs without reading the table's own pages (an index holds the rowid of each entry),
# then the table scanned in order, then the tables that point at memories.
_SEQ_SOURCES = (
    "SELECT seq FROM memories INDEXED BY memories_rev",
    "SELECT seq FROM memories INDEXED BY sqlite_autoindex_memories_1",
    "SELECT seq FROM memories NOT INDEXED",
    "SELECT seq FROM embeddings",
    "SELECT seq FROM memory_links",
    "SELECT seq FROM memory_sources",
    "SELECT source FROM memory_sources",
)


# The memories table's columns in the order its records hold them (`schema.py`; `suspicious` was added last).
COLUMNS = (
    "seq", "id", "text", "kind", "tags", "session", "role", "files", "symbols", "content_hash", "created_at", "updated_at",
    "pinned", "superseded_by", "deleted_at", "access_count", "last_accessed_at", "rev", "suspicious",
)  # fmt: skip
_ID = re.compile(r"[0-9A-Za-z_.:-]{1,64}")


@dataclass
class Salvaged:
    """What was read: the memories (tombstones among them) in seq order, and what was not."""

    memories: list[ExportedMemory] = field(default_factory=list)
    journal_id: str = "unreadable"
    unreadable: list[int] = field(default_factory=list)  # seqs whose row could not be read or made no valid memory
    from_pages: int = 0  # memories SQL could not reach, read from their pages
    lost_links: int = 0  # memories whose code links could not be read
    lost_sources: int = 0  # derived-from relations dropped: unreadable, or their source memory was lost
    unlinked_supersessions: list[str] = field(default_factory=list)  # ids whose newer version was lost
    truncated: bool = False  # the file is shorter than its header says
    schema_lost: bool = False  # no table could be read by name: memories came from the pages, without links or sources

    @property
    def tombstones(self) -> int:
        return sum(memory.deleted_at is not None for memory in self.memories)

    def header(self, exported_at: str) -> ExportHeader:
        return ExportHeader(
            format=FORMAT,
            version=VERSION,
            exported_at=exported_at,
            journal_id=self.journal_id,
            memories=len(self.memories) - self.tombstones,
            tombstones=self.tombstones,
        )

    @property
    def complete(self) -> bool:
        lost = self.unreadable or self.lost_links or self.lost_sources or self.unlinked_supersessions
        return not (lost or self.truncated or self.schema_lost)


def _connect(path: Path) -> sqlite3.Connection:
    """Read-only. A write-ahead log with content holds committed changes, so it is read too; without one, the file
    is opened as immutable, which creates no -wal or -shm file beside it."""
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() and wal.stat().st_size > 0 else "immutable=1"
    db = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, isolation_level=None)
    db.row_factory = sqlite3.Row
    return db


def _seqs(db: sqlite3.Connection, sql: str) -> set[int]:
    """The seqs `sql` lists before it fails, if it fails."""
    found: set[int] = set()
    try:
        for (seq,) in db.execute(sql):
            if isinstance(seq, int):
                found.add(seq)
    except sqlite3.Error:
        pass
    return found


def _memory(row: Mapping[str, Any], links: list[ExportedLink], sources: list[ExportedSource]) -> ExportedMemory:
    return ExportedMemory(**row_to_memory(row).model_dump(), links=links, sources=sources)


def salvage(path: Path) -> Salvaged:
    """Every memory of the journal at `path` that SQLite can still read, with its links and sources where they can
    be read (see the module's docstring); `StorageError` if there is no file there."""
    if not path.is_file():
        raise StorageError(f"there is no journal at {path}; give the path of the damaged journal (or a copy of it)")
    found = Salvaged()
    rows: dict[int, Mapping[str, Any]] = {}
    db: sqlite3.Connection | None = None
    try:
        db = _connect(path)
        db.execute("SELECT name FROM sqlite_schema WHERE name = 'memories'").fetchall()
    except sqlite3.Error:  # the schema is unreadable: only the pages can tell
        if db is not None:
            db.close()
        db, found.schema_lost = None, True
    try:
        if db is not None:
            rows = _read(db, path, found)
        _from_pages(path, rows, found)
        ids = {seq: row["id"] for seq, row in rows.items()}
        for seq, row in sorted(rows.items()):
            try:
                links = _links(db, seq, found) if db is not None else []
                sources = _sources(db, seq, ids, found) if db is not None else []
                found.memories.append(_memory(row, links, sources))
            except (ValidationError, ValueError, TypeError, KeyError):  # a garbled row that still parsed as a record
                found.unreadable.append(seq)
    finally:
        if db is not None:
            db.close()
    _unlink_lost_versions(found.memories, found)
    found.unreadable.sort()
    return found


def _read(db: sqlite3.Connection, path: Path, found: Salvaged) -> dict[int, Mapping[str, Any]]:
    """The memories SQL can read, by seq; the seqs it fails on go to `found.unreadable`."""
    try:
        found.journal_id = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0]
    except (sqlite3.Error, TypeError):
        pass
    known = set().union(*(_seqs(db, sql) for sql in _SEQ_SOURCES))
    rows: dict[int, Mapping[str, Any]] = {}
    # Seqs are handed out in order and never reused, so none is larger than the file has bytes: a garbled index
    # holding a huge number does not make this loop run for ever.
    size = path.stat().st_size
    top = max((seq for seq in known if 0 < seq <= size), default=0)
    for seq in range(1, top + 1):
        try:
            row = db.execute("SELECT * FROM memories WHERE seq = ?", (seq,)).fetchone()
        except sqlite3.Error:
            found.unreadable.append(seq)
            continue
        if row is not None:
            rows[seq] = dict(zip(row.keys(), row, strict=True))  # a row iterates over its values
    return rows


def _from_pages(path: Path, rows: dict[int, Mapping[str, Any]], found: Salvaged) -> None:
    """Add the memories SQL could not reach, read from the file's pages (the newest version of each, by `rev`)."""
    unreachable = set(found.unreadable)
    newest: dict[int, ScannedRow] = {}
    for row in scan(path):
        if found.journal_id == "unreadable" and row.columns == 2 and row.whole and row.values[0] == "journal_id":
            found.journal_id = str(row.values[1])  # the meta table's row
        if row.rowid in rows or not _shaped_like_a_memory(row):
            continue
        held = newest.get(row.rowid)
        if held is None or (row.whole and (not held.whole or _rev(row) > _rev(held))):
            newest[row.rowid] = row
    for seq, row in newest.items():
        if row.whole:
            rows[seq] = dict(zip(COLUMNS, [seq, *row.values[1:]], strict=False))
            found.from_pages += 1
            unreachable.discard(seq)
        else:
            unreachable.add(seq)  # its text runs on into pages that are damaged or gone
    found.unreadable = sorted(unreachable)
    found.truncated = _shorter_than_its_header(path)


def _shaped_like_a_memory(row: ScannedRow) -> bool:
    """A record of the memories table: 18 or 19 columns, the seq's NULL first, then an id; when whole, a known kind
    and JSON lists where the table keeps them."""
    values = row.values
    if row.columns not in (len(COLUMNS) - 1, len(COLUMNS)) or len(values) < 2 or values[0] is not None:
        return False
    if not isinstance(values[1], str) or not _ID.fullmatch(values[1]):
        return False
    if not row.whole:
        return True
    return values[3] in KINDS and all(isinstance(values[i], str) and str(values[i]).startswith("[") for i in (4, 7, 8))


def _rev(row: ScannedRow) -> int:
    rev = row.values[17]
    return rev if isinstance(rev, int) else -1


def _shorter_than_its_header(path: Path) -> bool:
    with path.open("rb") as file:
        header = file.read(100)
    if len(header) < 100:
        return True
    page_size = int.from_bytes(header[16:18], "big")
    return path.stat().st_size < (65536 if page_size == 1 else page_size) * int.from_bytes(header[28:32], "big")


def _links(db: sqlite3.Connection, seq: int, found: Salvaged) -> list[ExportedLink]:
    try:
        rows = db.execute("SELECT target, path, name, hash FROM memory_links WHERE seq = ? ORDER BY target, path, name", (seq,))
        return [ExportedLink(target=row[0], path=row[1], name=row[2], hash=row[3]) for row in rows]
    except (sqlite3.Error, ValidationError):
        found.lost_links += 1
        return []


def _sources(db: sqlite3.Connection, seq: int, ids: dict[int, str], found: Salvaged) -> list[ExportedSource]:
    try:
        rows = db.execute(
            "SELECT source, relation FROM memory_sources WHERE seq = ? ORDER BY source, relation", (seq,)
        ).fetchall()
    except sqlite3.Error:
        found.lost_sources += 1
        return []
    sources = []
    for source, relation in rows:
        try:
            sources.append(ExportedSource(id=ids[source], relation=relation))
        except (KeyError, ValidationError):  # its source memory was lost
            found.lost_sources += 1
    return sources


def _unlink_lost_versions(memories: Iterable[ExportedMemory], found: Salvaged) -> None:
    """A memory superseded by one that was lost points at nothing: it becomes current again, and is listed, so that
    its owner can judge it (else it would stay hidden from search and its history would end in an error)."""
    kept = {memory.id for memory in memories}
    for memory in memories:
        if memory.superseded_by is not None and memory.superseded_by not in kept:
            found.unlinked_supersessions.append(memory.id)
            memory.superseded_by = None
