"""The change feed every process's index follows: the journal's counters (revision, reindex epoch, forgets), its
id, and each memory as of the revision that last changed it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from project_ledger.storage.journal.db import JournalDb
from project_ledger.storage.journal.rows import iso_to_epoch


@dataclass(frozen=True)
class Change:
    """One memory as of revision `rev`, in the shape the index needs."""

    seq: int
    rev: int
    live: bool
    text: str
    kind: str
    tags: list[str]
    session: str | None
    pinned: bool
    superseded: bool
    created: float
    vector: bytes | None


class ChangeFeed:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def rev(self) -> int:
        return self._db.read("SELECT value FROM counters WHERE name = 'rev'")[0][0]

    def reindex_epoch(self) -> int:
        return self._db.read("SELECT value FROM counters WHERE name = 'reindex'")[0][0]

    def forget_count(self) -> int:
        return self._db.read("SELECT value FROM counters WHERE name = 'forgets'")[0][0]

    def journal_id(self) -> str:
        """A random id made with the journal: names this project's collection on a shared Qdrant server."""
        return self._db.read("SELECT value FROM meta WHERE key = 'journal_id'")[0][0]

    def request_reindex(self) -> None:
        """Every process's index sees the new epoch at its next catch-up and rebuilds itself."""
        with self._db.write() as db:
            db.execute("UPDATE counters SET value = value + 1 WHERE name = 'reindex'")

    def rev_and_indexable_count(self) -> tuple[int, int]:
        """The revision and the number of memories that belong in the index at it (superseded ones included),
        read in one statement, so from one snapshot."""
        row = self._db.read(
            "SELECT (SELECT value FROM counters WHERE name = 'rev'), (SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL)"
        )[0]
        return row[0], row[1]

    def changes_since(self, rev: int, model: str, limit: int) -> list[Change]:
        rows = self._db.read(
            "SELECT m.seq, m.rev, m.deleted_at, m.text, m.kind, m.tags, m.session, m.pinned, m.superseded_by, "
            "m.created_at, e.vector FROM memories m LEFT JOIN embeddings e ON e.seq = m.seq AND e.model = ? "
            "WHERE m.rev > ? ORDER BY m.rev LIMIT ?",
            (model, rev, limit),
        )
        return [
            Change(
                seq=row["seq"],
                rev=row["rev"],
                live=row["deleted_at"] is None,
                text=row["text"],
                kind=row["kind"],
                tags=json.loads(row["tags"]),
                session=row["session"],
                pinned=bool(row["pinned"]),
                superseded=row["superseded_by"] is not None,
                created=iso_to_epoch(row["created_at"]),
                vector=row["vector"],
            )
            for row in rows
        ]
