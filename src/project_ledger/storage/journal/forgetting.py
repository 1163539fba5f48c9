"""The forget cascade: a memory's text scrubbed to a tombstone, with everything derived from it, in one transaction.

Derived memories (what was captured from a turn, a gist over it) quote or paraphrase what they derive from, so
they go with it; their links are the `memory_sources` table. Scrubbed text leaves the database file at once
(`secure_delete`), and the WAL's old page images of it when `JournalDb.purge_wal` gets its checkpoint.
"""

from __future__ import annotations

import sqlite3

from project_ledger.errors import MemoryNotFound
from project_ledger.models import Memory
from project_ledger.storage.journal.db import JournalDb, next_rev
from project_ledger.storage.journal.rows import MEMORY_COLUMNS, row_to_memory, utc_now


def scrub(db: sqlite3.Connection, first: int) -> list[str]:
    """Turn memory `first` and what derives from it into tombstones, inside the caller's write; returns the derived
    ids. The caller marks the WAL for purging (`JournalDb.scrubbed`)."""
    now = utc_now()
    pending, done, derived = [first], set(), []
    while pending:
        seq = pending.pop()
        if seq in done:
            continue
        done.add(seq)
        db.execute(
            "UPDATE memories SET text = '', tags = '[]', files = '[]', symbols = '[]', content_hash = NULL, "
            "role = NULL, pinned = 0, suspicious = 0, deleted_at = ?, updated_at = ?, rev = ? WHERE seq = ?",
            (now, now, next_rev(db), seq),
        )
        db.execute("DELETE FROM embeddings WHERE seq = ?", (seq,))
        db.execute("DELETE FROM memory_links WHERE seq = ?", (seq,))
        db.execute("UPDATE counters SET value = value + 1 WHERE name = 'forgets'")
        for child in db.execute(
            "SELECT m.seq, m.id FROM memory_sources s JOIN memories m ON m.seq = s.seq "
            "WHERE s.source = ? AND m.deleted_at IS NULL",
            (seq,),
        ).fetchall():
            if child["seq"] not in done:
                derived.append(child["id"])
                pending.append(child["seq"])
    return list(dict.fromkeys(derived))


class Forgetting:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def forget(self, memory_id: str) -> list[str]:
        """Scrub the text and everything derived from it, keeping a tombstone (id, kind, dates, links).

        Memories derived from it go too, in the same transaction: what was captured
        from a turn quotes it, and a gist quotes or paraphrases what it covers.
        Returns the ids of those derived memories (the chain is followed to the end).
        """
        with self._db.write() as db:
            row = db.execute("SELECT seq, deleted_at FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                raise MemoryNotFound(memory_id)
            if row["deleted_at"] is not None:
                return []
            derived = scrub(db, row["seq"])
        self._db.scrubbed()
        self._db.purge_wal()
        return derived

    def derived(self, memory_id: str) -> list[Memory]:
        """The live memories that `forget(memory_id)` would erase with it: what derives from it, to the end of the
        chain, as `scrub` follows it (a forgotten memory ends a chain). Oldest first."""
        rows = self._db.read(
            "WITH RECURSIVE derived(seq) AS ("
            " SELECT s.seq FROM memory_sources s JOIN memories m ON m.seq = s.seq"
            " WHERE s.source = (SELECT seq FROM memories WHERE id = ?) AND m.deleted_at IS NULL"
            " UNION SELECT s.seq FROM memory_sources s JOIN derived d ON s.source = d.seq"
            " JOIN memories m ON m.seq = s.seq WHERE m.deleted_at IS NULL)"
            f" SELECT {MEMORY_COLUMNS} FROM memories WHERE seq IN (SELECT seq FROM derived) AND id != ? ORDER BY seq",
            (memory_id, memory_id),
        )
        return [row_to_memory(row) for row in rows]
