"""The `memory_links` table: each memory's anchors in the code, with the content hash its target had."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from project_ledger.models import LinkTarget
from project_ledger.storage.journal.db import JournalDb


@dataclass(frozen=True)
class Anchor:
    """A memory's link to code: a file, or a symbol (`name`, its qualified name) in a file."""

    target: LinkTarget
    path: str
    name: str
    hash: str | None  # content hash when the memory was stored; None if it was not indexed yet


class CodeLinks:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def anchors(self, ids: Sequence[str] | None = None) -> dict[str, list[Anchor]]:
        """Code links by memory id: of these live memories, or of all of them."""
        sql = "SELECT m.id, l.target, l.path, l.name, l.hash FROM memory_links l JOIN memories m ON m.seq = l.seq WHERE m.deleted_at IS NULL"
        params: list[object] = []
        if ids is not None:
            if not ids:
                return {}
            sql += f" AND m.id IN ({','.join('?' * len(ids))})"
            params = list(ids)
        found: dict[str, list[Anchor]] = {}
        for row in self._db.read(sql + " ORDER BY m.seq", params):
            found.setdefault(row[0], []).append(Anchor(row[1], row[2], row[3], row[4]))
        return found

    def settle_anchor(self, memory_id: str, anchor: Anchor, digest: str) -> None:
        """Record the hash of a target that was not indexed yet when the memory was stored."""
        with self._db.write() as db:
            db.execute(
                "UPDATE memory_links SET hash = ? WHERE seq = (SELECT seq FROM memories WHERE id = ?) AND target = ? "
                "AND path = ? AND name = ? AND hash IS NULL",
                (digest, memory_id, anchor.target, anchor.path, anchor.name),
            )
