"""The `memory_sources` table read back: what a memory derives from (a captured memory's turn, a gist's turns and
citations), and what derives from it."""

from __future__ import annotations

from collections.abc import Sequence

from project_ledger.models import Direction
from project_ledger.storage.journal.db import JournalDb


class Sources:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def sources(self, ids: Sequence[str], relations: Sequence[str]) -> dict[str, list[str]]:
        """For each of these memories, the live memories it derives from by these relations, oldest first."""
        if not ids or not relations:
            return {}
        sql = (
            "SELECT m.id, src.id FROM memory_sources s JOIN memories m ON m.seq = s.seq JOIN memories src ON src.seq = s.source "
            f"WHERE m.id IN ({','.join('?' * len(ids))}) AND s.relation IN ({','.join('?' * len(relations))}) "
            "AND src.deleted_at IS NULL ORDER BY s.source"
        )
        found: dict[str, list[str]] = {}
        for memory_id, source_id in self._db.read(sql, [*ids, *relations]):
            found.setdefault(memory_id, []).append(source_id)
        return found

    def relations(self, memory_id: str) -> list[tuple[str, str, Direction]]:
        """(relation, other memory's id, "from" or "to"): what this memory derives from, and what derives from it."""
        rows = self._db.read(
            "SELECT s.relation, src.id, 'from' FROM memory_sources s JOIN memories m ON m.seq = s.seq "
            "JOIN memories src ON src.seq = s.source WHERE m.id = ? "
            "UNION ALL SELECT s.relation, m.id, 'to' FROM memory_sources s JOIN memories m ON m.seq = s.seq "
            "JOIN memories src ON src.seq = s.source WHERE src.id = ? ORDER BY 3, 2",
            (memory_id, memory_id),
        )
        return [(row[0], row[1], row[2]) for row in rows]
