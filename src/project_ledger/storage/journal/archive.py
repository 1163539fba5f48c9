"""Export and import at the journal's level: every memory read out in one snapshot, and exported memories written
back with their ids, dates, pins, access data, code links and relations (the file format is `storage/backup`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from project_ledger.storage.backup import ExportedLink, ExportedMemory, ExportedSource
from project_ledger.storage.journal.db import JournalDb, next_rev
from project_ledger.storage.journal.forgetting import scrub
from project_ledger.storage.journal.rows import MEMORY_COLUMNS, content_hash, row_to_memory
from project_ledger.text.injection import looks_like_instructions


@dataclass
class Restored:
    """What an import did: memories added (tombstones among them), live ones it forgot, ids it left as they were,
    and secrets replaced on the way in."""

    added: int = 0
    tombstones: int = 0
    forgotten: int = 0
    kept: int = 0
    redacted: int = 0


class Archive:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def dump(self, batch: int = 500) -> list[ExportedMemory]:
        """Every memory, tombstones included, in the order stored, read in one transaction (a consistent snapshot)."""
        dumped: list[ExportedMemory] = []
        with self._db.snapshot() as db:
            after = 0
            while rows := db.execute(
                f"SELECT seq, {MEMORY_COLUMNS} FROM memories WHERE seq > ? ORDER BY seq LIMIT ?", (after, batch)
            ).fetchall():
                first, after = rows[0]["seq"], rows[-1]["seq"]
                links: dict[int, list[ExportedLink]] = {}
                for seq, target, path, name, digest in db.execute(
                    "SELECT seq, target, path, name, hash FROM memory_links WHERE seq BETWEEN ? AND ? ORDER BY seq, target, path, name",
                    (first, after),
                ):
                    links.setdefault(seq, []).append(ExportedLink(target=target, path=path, name=name, hash=digest))
                sources: dict[int, list[ExportedSource]] = {}
                for seq, source_id, relation in db.execute(
                    "SELECT s.seq, m.id, s.relation FROM memory_sources s JOIN memories m ON m.seq = s.source "
                    "WHERE s.seq BETWEEN ? AND ? ORDER BY s.seq, s.source, s.relation",
                    (first, after),
                ):
                    sources.setdefault(seq, []).append(ExportedSource(id=source_id, relation=relation))
                dumped.extend(
                    ExportedMemory(
                        **row_to_memory(row).model_dump(), links=links.get(row["seq"], []), sources=sources.get(row["seq"], [])
                    )
                    for row in rows
                )
        return dumped

    def restore(self, memories: Sequence[ExportedMemory], batch: int = 500) -> Restored:
        """Add exported memories, keeping their ids, dates, pins, access data and relations.

        A memory whose id is already here is left as it is, with one exception:
        a tombstone in the export forgets the live memory of that id (and what
        derives from it), so an erase cannot be undone by importing an older
        backup. A tombstone here is never brought back to life. Relations are
        written after every memory is in, so their order in the file does not
        matter. Each batch is one transaction: a running server keeps writing
        in between.
        """
        restored = Restored()
        present: dict[str, bool] = {}  # id -> live, for the ids of the export already in this journal
        for start in range(0, len(memories), batch):
            ids = [memory.id for memory in memories[start : start + batch]]
            rows = self._db.read(f"SELECT id, deleted_at FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids)
            present.update({row[0]: row[1] is None for row in rows})
        for start in range(0, len(memories), batch):
            with self._db.write() as db:
                for memory in memories[start : start + batch]:
                    if memory.id not in present:
                        _insert_exported(db, memory)
                        restored.added += 1
                        restored.tombstones += memory.deleted_at is not None
                    elif present[memory.id] and memory.deleted_at is not None:
                        seq = db.execute("SELECT seq FROM memories WHERE id = ?", (memory.id,)).fetchone()[0]
                        restored.forgotten += 1 + len(scrub(db, seq))
                        self._db.scrubbed()
                    else:
                        restored.kept += 1
        added = [memory for memory in memories if memory.id not in present]
        for start in range(0, len(added), batch):
            with self._db.write() as db:
                for memory in added[start : start + batch]:
                    _relate_exported(db, memory)
        self._db.purge_wal()
        return restored


def _insert_exported(db: sqlite3.Connection, memory: ExportedMemory) -> None:
    live = memory.deleted_at is None
    db.execute(
        "INSERT INTO memories (id, text, kind, tags, session, role, files, symbols, content_hash, created_at, updated_at, "
        "pinned, superseded_by, deleted_at, access_count, last_accessed_at, rev, suspicious) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            memory.id,
            memory.text,
            memory.kind,
            json.dumps(memory.tags, ensure_ascii=False),
            memory.session,
            memory.role,
            json.dumps(memory.files, ensure_ascii=False),
            json.dumps(memory.symbols, ensure_ascii=False),
            content_hash(memory.text) if live else None,
            memory.created_at,
            memory.updated_at,
            int(memory.pinned),
            memory.superseded_by,
            memory.deleted_at,
            memory.access_count,
            memory.last_accessed_at,
            next_rev(db),
            int(live and looks_like_instructions(memory.text)),  # judged here: an export's own flag is not trusted
        ),
    )
    if not live:
        db.execute("UPDATE counters SET value = value + 1 WHERE name = 'forgets'")


def _relate_exported(db: sqlite3.Connection, memory: ExportedMemory) -> None:
    """Code links and derived-from relations of an imported memory; a source missing from both is dropped."""
    seq = db.execute("SELECT seq FROM memories WHERE id = ?", (memory.id,)).fetchone()[0]
    db.executemany(
        "INSERT OR IGNORE INTO memory_links (seq, target, path, name, hash) VALUES (?,?,?,?,?)",
        [(seq, link.target, link.path, link.name, link.hash) for link in memory.links],
    )
    db.executemany(
        "INSERT OR IGNORE INTO memory_sources (seq, source, relation) SELECT ?, seq, ? FROM memories WHERE id = ?",
        [(seq, source.relation, source.id) for source in memory.sources],
    )
