"""Reads for people looking through the journal (the web inspector, `status`): filtered pages of live memories, the
tags and sessions to filter by, and how many memories there are of each kind."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from project_ledger.models import Memory
from project_ledger.storage.journal.db import JournalDb
from project_ledger.storage.journal.rows import MEMORY_COLUMNS, row_to_memory


@dataclass(frozen=True)
class Counts:
    by_kind: dict[str, int]
    pinned: int
    superseded: int
    forgotten: int


class Browsing:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def browse(
        self,
        kind: str | None = None,
        tag: str | None = None,
        session: str | None = None,
        pinned: bool = False,
        superseded: bool = False,
        ids: Sequence[str] | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[Memory], int]:
        """Live memories matching every condition given, newest first, one page of them; and how many match.

        `pinned` and `superseded` keep only those; `ids` keeps only these ids.
        """
        conditions: list[str] = ["deleted_at IS NULL"]
        params: list[object] = []
        for condition, value in (
            ("kind = ?", kind),
            ("EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value = ?)", tag),
            ("session = ?", session),
        ):
            if value is not None:
                conditions.append(condition)
                params.append(value)
        if pinned:
            conditions.append("pinned = 1")
        if superseded:
            conditions.append("superseded_by IS NOT NULL")
        if ids is not None:
            conditions.append(f"id IN ({','.join('?' * len(ids))})" if ids else "0")
            params += ids
        where = " AND ".join(conditions)
        total = self._db.read(f"SELECT COUNT(*) FROM memories WHERE {where}", params)[0][0]
        rows = self._db.read(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY seq DESC LIMIT ? OFFSET ?", [*params, limit, offset]
        )
        return [row_to_memory(row) for row in rows], total

    def labels(self, limit: int = 500) -> tuple[list[str], list[str]]:
        """The tags and the sessions live memories carry (the most recent `limit` sessions), for filter choices."""
        tags = self._db.read(
            "SELECT DISTINCT t.value FROM memories, json_each(memories.tags) t WHERE deleted_at IS NULL ORDER BY t.value"
        )
        sessions = self._db.read(
            "SELECT session FROM memories WHERE deleted_at IS NULL AND session IS NOT NULL GROUP BY session "
            "ORDER BY MAX(seq) DESC LIMIT ?",
            (limit,),
        )
        return [row[0] for row in tags], [row[0] for row in sessions]

    def counts(self) -> Counts:
        rows = self._db.read(
            "SELECT kind, COUNT(*) AS n FROM memories WHERE deleted_at IS NULL AND superseded_by IS NULL GROUP BY kind"
        )
        totals = self._db.read(
            "SELECT SUM(pinned = 1 AND deleted_at IS NULL) AS pinned, "
            "SUM(superseded_by IS NOT NULL AND deleted_at IS NULL) AS superseded, "
            "SUM(deleted_at IS NOT NULL) AS forgotten FROM memories"
        )[0]
        return Counts(
            by_kind={row["kind"]: row["n"] for row in rows},
            pinned=totals["pinned"] or 0,
            superseded=totals["superseded"] or 0,
            forgotten=totals["forgotten"] or 0,
        )
