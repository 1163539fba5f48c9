"""A session's memories read back: its turns in order, the turns around a hit, and its gists."""

from __future__ import annotations

from collections.abc import Sequence

from project_ledger.models import Memory
from project_ledger.storage.journal.db import JournalDb
from project_ledger.storage.journal.rows import CURRENT_GIST, MEMORY_COLUMNS, row_to_memory, select_live


class Sessions:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def session_memories(self, session: str) -> list[Memory]:
        """Every live memory of a session (superseded ones included), oldest first."""
        return list(select_live(self._db, "session", [session], "ORDER BY seq").values())

    def session_turn_count(self, session: str) -> int:
        rows = self._db.read(
            "SELECT COUNT(*) FROM memories WHERE session = ? AND kind = 'turn' AND deleted_at IS NULL", (session,)
        )
        return rows[0][0]

    def recent_turns(self, session: str, limit: int) -> list[Memory]:
        """The last `limit` live turns of a session, newest first."""
        rows = self._db.read(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE session = ? AND kind = 'turn' AND deleted_at IS NULL "
            "ORDER BY seq DESC LIMIT ?",
            (session, limit),
        )
        return [row_to_memory(row) for row in rows]

    def neighbours(self, seqs: Sequence[int]) -> dict[int, list[int]]:
        """For each of these live turns with a session: the live turns said just before and just after it in that
        session (seq order is the order they were stored), by seq. Two lookups per turn in `memories_session`."""
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        rows = self._db.read(
            "SELECT c.seq, "
            "(SELECT MAX(m.seq) FROM memories m WHERE m.session = c.session AND m.kind = 'turn' AND m.deleted_at IS NULL "
            "AND m.seq < c.seq), "
            "(SELECT MIN(m.seq) FROM memories m WHERE m.session = c.session AND m.kind = 'turn' AND m.deleted_at IS NULL "
            "AND m.seq > c.seq) "
            f"FROM memories c WHERE c.seq IN ({marks}) AND c.kind = 'turn' AND c.session IS NOT NULL AND c.deleted_at IS NULL",
            list(seqs),
        )
        return {row[0]: [seq for seq in row[1:] if seq is not None] for row in rows}

    def gists(self, session: str | None = None, limit: int = 1) -> list[Memory]:
        """The current gists, newest first: of one session, or of any."""
        where = CURRENT_GIST
        params: list[object] = []
        if session is not None:
            where += " AND session = ?"
            params.append(session)
        rows = self._db.read(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY seq DESC LIMIT ?", [*params, limit])
        return [row_to_memory(row) for row in rows]

    def gist_methods(self) -> dict[str, int]:
        """Current gists by the way they were written (their second tag: sampling or extractive)."""
        rows = self._db.read(
            f"SELECT json_extract(tags, '$[1]') AS method, COUNT(*) FROM memories WHERE {CURRENT_GIST} GROUP BY method"
        )
        return {row[0] or "unknown": row[1] for row in rows}

    def covered_turns(self, gist_id: str) -> int:
        """How many of its session's turns a gist was written over."""
        rows = self._db.read(
            "SELECT COUNT(*) FROM memory_sources s JOIN memories g ON g.seq = s.seq JOIN memories t ON t.seq = s.source "
            "WHERE g.id = ? AND s.relation = 'covers' AND t.kind = 'turn'",
            (gist_id,),
        )
        return rows[0][0]
