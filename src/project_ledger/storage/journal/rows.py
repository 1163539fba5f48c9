"""How a memory is kept in a row of `memories`: its columns, dates, content hash and id, read back as a `Memory`.

Plain functions over a connection or a row, shared by the table groups.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from project_ledger.errors import MemoryForgotten, MemoryNotFound
from project_ledger.models import Memory
from project_ledger.storage.journal.db import JournalDb

_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case

MEMORY_COLUMNS = (
    "id, text, kind, tags, session, role, files, symbols, created_at, updated_at, pinned, "
    "superseded_by, deleted_at, access_count, last_accessed_at, suspicious"
)

# A gist is a summary the ledger wrote: tagged exactly `gist` (a reserved tag `remember` refuses).
CURRENT_GIST = (
    "kind = 'summary' AND EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value = 'gist') "
    "AND superseded_by IS NULL AND deleted_at IS NULL"
)


def utc_now() -> str:
    return _journal_date(datetime.now(UTC))


def iso_utc(epoch: float) -> str:
    """Epoch seconds in the journal's date format (`utc_now`'s)."""
    return _journal_date(datetime.fromtimestamp(epoch, UTC))


def _journal_date(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def iso_to_epoch(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def new_memory_id() -> str:
    """`m` plus 10 random base32 characters (50 bits): short enough for a model to copy exactly."""
    return "m" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(10))


class Columns(Protocol):
    """A row read by column name: a `sqlite3.Row`, or a dict of one (salvage's)."""

    def __getitem__(self, column: str, /) -> Any: ...

    def keys(self) -> Collection[str]: ...


def row_to_memory(row: Columns) -> Memory:
    """A `memories` row as a `Memory` (a journal from before the `suspicious` column reads as not flagged)."""
    return Memory(
        id=row["id"],
        text=row["text"],
        kind=row["kind"],
        tags=json.loads(row["tags"]),
        session=row["session"],
        role=row["role"],
        files=json.loads(row["files"]),
        symbols=json.loads(row["symbols"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        pinned=bool(row["pinned"]),
        superseded_by=row["superseded_by"],
        deleted_at=row["deleted_at"],
        access_count=row["access_count"],
        last_accessed_at=row["last_accessed_at"],
        suspicious=bool(row["suspicious"]) if "suspicious" in row.keys() else False,  # noqa: SIM118 - a Row's `in` reads values
    )


def require_live(db: sqlite3.Connection, memory_id: str) -> sqlite3.Row:
    """The memory's seq and deletion date, inside a write; `MemoryNotFound` or `MemoryForgotten` if it is not live."""
    row = db.execute("SELECT seq, deleted_at FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        raise MemoryNotFound(memory_id)
    if row["deleted_at"] is not None:
        raise MemoryForgotten(memory_id)
    return row


def select_live(db: JournalDb, column: str, values: Sequence[object], condition: str = "") -> dict[int, Memory]:
    """Live memories whose `column` is one of `values` (and that meet `condition`), by seq."""
    if not values:
        return {}
    marks = ",".join("?" * len(values))
    rows = db.read(
        f"SELECT seq, {MEMORY_COLUMNS} FROM memories WHERE {column} IN ({marks}) AND deleted_at IS NULL {condition}",
        list(values),
    )
    return {row["seq"]: row_to_memory(row) for row in rows}
