"""The `embeddings` table: each memory's dense vector per model, kept so that no process embeds a text twice."""

from __future__ import annotations

from collections.abc import Sequence

from project_ledger.storage.journal.db import JournalDb, next_rev


class Embeddings:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def missing_embeddings(self, model: str, limit: int, *, changed_after: int | None = None) -> list[tuple[int, str]]:
        """Live memories without a vector for `model`, oldest first; with `changed_after`, only those whose
        revision is newer than it (an indexed read instead of a scan of every memory)."""
        since = "AND m.rev > ? " if changed_after is not None else ""
        rows = self._db.read(
            "SELECT m.seq, m.text FROM memories m LEFT JOIN embeddings e ON e.seq = m.seq AND e.model = ? "
            f"WHERE m.deleted_at IS NULL AND e.seq IS NULL {since}ORDER BY m.seq LIMIT ?",
            (model, *([changed_after] if changed_after is not None else []), limit),
        )
        return [(row["seq"], row["text"]) for row in rows]

    def count_missing_embeddings(self, model: str) -> int:
        return self._db.read(
            "SELECT COUNT(*) FROM memories m LEFT JOIN embeddings e ON e.seq = m.seq AND e.model = ? "
            "WHERE m.deleted_at IS NULL AND e.seq IS NULL",
            (model,),
        )[0][0]

    def store_embeddings(self, model: str, vectors: Sequence[tuple[int, bytes]]) -> None:
        """Save vectors and bump each memory's rev so every process's index picks them up."""
        with self._db.write() as db:
            for seq, vector in vectors:
                live = db.execute("SELECT 1 FROM memories WHERE seq = ? AND deleted_at IS NULL", (seq,)).fetchone()
                if live is None:  # forgotten while it was being embedded
                    continue
                db.execute("INSERT OR REPLACE INTO embeddings (seq, model, vector) VALUES (?, ?, ?)", (seq, model, vector))
                db.execute("UPDATE memories SET rev = ? WHERE seq = ?", (next_rev(db), seq))

    def vectors(self, seqs: Sequence[int], model: str) -> dict[int, bytes]:
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        rows = self._db.read(f"SELECT seq, vector FROM embeddings WHERE model = ? AND seq IN ({marks})", [model, *seqs])
        return {row[0]: row[1] for row in rows}
