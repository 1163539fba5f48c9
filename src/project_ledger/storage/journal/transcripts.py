"""The `transcript_offsets` table: how far each client transcript has been read into its session."""

from __future__ import annotations

from project_ledger.storage.journal.db import JournalDb
from project_ledger.storage.journal.rows import utc_now


class TranscriptOffsets:
    def __init__(self, db: JournalDb) -> None:
        self._db = db

    def transcript_offset(self, session: str, transcript: str) -> int:
        """Where reading `transcript` into `session` stopped last time: 0 for one never read."""
        rows = self._db.read(
            "SELECT byte_offset FROM transcript_offsets WHERE session = ? AND transcript = ?", (session, transcript)
        )
        return rows[0][0] if rows else 0

    def set_transcript_offset(self, session: str, transcript: str, offset: int) -> None:
        with self._db.write() as db:
            db.execute(
                "INSERT INTO transcript_offsets (session, transcript, byte_offset, updated_at) VALUES (?,?,?,?) "
                "ON CONFLICT (session, transcript) DO UPDATE SET byte_offset = excluded.byte_offset, updated_at = excluded.updated_at",
                (session, transcript, offset, utc_now()),
            )
