"""The `memories` table: storing a memory (with its code links and sources), supersession, pins, access data, and
reading memories back by id or seq."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from project_ledger.errors import InvalidArgument, MemoryNotFound
from project_ledger.models import Memory
from project_ledger.storage.journal.anchors import Anchor
from project_ledger.storage.journal.db import JournalDb, next_rev
from project_ledger.storage.journal.rows import (
    CURRENT_GIST,
    MEMORY_COLUMNS,
    content_hash,
    new_memory_id,
    require_live,
    row_to_memory,
    select_live,
    utc_now,
)
from project_ledger.text.injection import looks_like_instructions


class Memories:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def insert(
        self,
        *,
        text: str,
        kind: str,
        tags: list[str],
        session: str | None,
        role: str | None,
        files: list[str],
        symbols: list[str],
        pinned: bool,
        supersedes: str | None,
        anchors: Sequence[Anchor] = (),
        sources: Sequence[tuple[str, str]] = (),
        replaces_gist: bool = False,
        created_at: str | None = None,
    ) -> tuple[str, bool]:
        """Store a memory; returns (id, created).

        The same text of the same kind in the same session as a current (live,
        not superseded) memory is not stored twice: that memory's id comes back,
        pinned if asked, with its own tags kept. `sources` are (memory id,
        relation) pairs this memory derives from (see `memory_sources`); each
        must still be live, or nothing is stored (`MemoryForgotten`): text
        derived from a forgotten memory must not outlive it. With
        `replaces_gist`, the session's current gist is looked up and superseded
        inside the same transaction, so two processes cannot both replace it.
        `created_at` dates a memory that was said earlier (an imported transcript's turn); default: now.
        """
        digest = content_hash(text)
        now = utc_now()
        said = created_at or now
        with self._db.write() as db:
            for source, _ in sources:
                require_live(db, source)
            if replaces_gist:
                current = db.execute(
                    f"SELECT id FROM memories WHERE {CURRENT_GIST} AND session IS ? ORDER BY seq DESC LIMIT 1", (session,)
                ).fetchone()
                supersedes = current["id"] if current else None
            twin = db.execute(
                "SELECT id, pinned FROM memories WHERE content_hash = ? AND session IS ? AND kind = ? "
                "AND deleted_at IS NULL AND superseded_by IS NULL LIMIT 1",
                (digest, session, kind),
            ).fetchone()
            if supersedes is not None:
                require_live(db, supersedes)
            if twin is not None:
                db.execute(
                    "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?",
                    (now, twin["id"]),
                )
                if supersedes is not None and supersedes != twin["id"]:
                    self._supersede(db, supersedes, twin["id"], now)
                if pinned and not twin["pinned"]:
                    db.execute(
                        "UPDATE memories SET pinned = 1, updated_at = ?, rev = ? WHERE id = ?", (now, next_rev(db), twin["id"])
                    )
                return twin["id"], False
            memory_id = new_memory_id()
            while db.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone():
                memory_id = new_memory_id()
            db.execute(
                "INSERT INTO memories (id, text, kind, tags, session, role, files, symbols, content_hash, "
                "created_at, updated_at, pinned, rev, suspicious) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    memory_id,
                    text,
                    kind,
                    json.dumps(tags, ensure_ascii=False),
                    session,
                    role,
                    json.dumps(files, ensure_ascii=False),
                    json.dumps(symbols, ensure_ascii=False),
                    digest,
                    said,
                    now,
                    int(pinned),
                    next_rev(db),
                    int(looks_like_instructions(text)),  # judged as written, never on the way out
                ),
            )
            if supersedes is not None:
                self._supersede(db, supersedes, memory_id, now)
            seq = db.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
            db.executemany(
                "INSERT OR IGNORE INTO memory_links (seq, target, path, name, hash) VALUES (?,?,?,?,?)",
                [(seq, a.target, a.path, a.name, a.hash) for a in anchors],
            )
            if sources:
                marks = ",".join("?" * len(sources))
                found = dict(
                    db.execute(f"SELECT id, seq FROM memories WHERE id IN ({marks})", [i for i, _ in sources]).fetchall()
                )
                db.executemany(
                    "INSERT OR IGNORE INTO memory_sources (seq, source, relation) VALUES (?,?,?)",
                    [(seq, found[source], relation) for source, relation in sources],
                )
            return memory_id, True

    @staticmethod
    def _supersede(db: sqlite3.Connection, old: str, new: str, now: str) -> None:
        current = db.execute("SELECT superseded_by FROM memories WHERE id = ?", (old,)).fetchone()["superseded_by"]
        if current is not None and current != new:  # keeps each history a single chain
            raise InvalidArgument(f"memory {old!r} is already superseded by {current!r}; supersede {current!r} instead")
        db.execute("UPDATE memories SET superseded_by = ?, updated_at = ?, rev = ? WHERE id = ?", (new, now, next_rev(db), old))

    def set_pinned(self, memory_id: str, pinned: bool) -> None:
        with self._db.write() as db:
            require_live(db, memory_id)
            db.execute(
                "UPDATE memories SET pinned = ?, updated_at = ?, rev = ? WHERE id = ?",
                (int(pinned), utc_now(), next_rev(db), memory_id),
            )

    def touch(self, ids: Sequence[str]) -> None:
        """Record that these memories were used: fetched by id, pinned, or stored again (access stats do not
        change the index)."""
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        with self._db.write() as db:
            db.execute(
                f"UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id IN ({marks})",
                (utc_now(), *ids),
            )

    def get(self, memory_id: str) -> Memory:
        rows = self._db.read(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        if not rows:
            raise MemoryNotFound(memory_id)
        return row_to_memory(rows[0])

    def history(self, memory_id: str) -> list[Memory]:
        """The supersession chain through `memory_id`, oldest first (forgotten links show as tombstones)."""
        chain = [self.get(memory_id)]
        while older := self._db.read(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE superseded_by = ?", (chain[0].id,)):
            chain.insert(0, row_to_memory(older[0]))
        while chain[-1].superseded_by is not None:
            chain.append(self.get(chain[-1].superseded_by))
        return chain

    def get_by_seqs(self, seqs: Sequence[int]) -> dict[int, Memory]:
        """Live memories for index point ids; forgotten ones are left out."""
        return select_live(self._db, "seq", seqs)

    def live_by_seq(self, ids: Sequence[str]) -> dict[int, Memory]:
        """Live memories with these ids, by seq; unknown and forgotten ids are left out."""
        return select_live(self._db, "id", list(ids))

    def live(self, ids: Sequence[str]) -> dict[str, Memory]:
        """Live memories by id; unknown and forgotten ids are left out."""
        return {memory.id: memory for memory in self.live_by_seq(ids).values()}

    def pinned(self) -> list[Memory]:
        rows = self._db.read(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE pinned = 1 AND deleted_at IS NULL ORDER BY created_at")
        return [row_to_memory(row) for row in rows]

    def superseded_in_sessions(self, sessions: Sequence[str]) -> dict[int, Memory]:
        """Live memories that were superseded, from these sessions, by seq (index `memories_superseded`)."""
        return select_live(self._db, "session", sessions, "AND superseded_by IS NOT NULL")
