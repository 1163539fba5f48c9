"""The journal: a SQLite database in WAL mode that is the ledger's source of truth.

Every memory is stored here in full and unmodified; the search index is derived
from it and can always be rebuilt. Several processes may share one journal:
SQLite serialises their writes, and every change takes the next value of a
global revision counter inside its own transaction, so `rev` order is commit
order and any process can catch its index up with `changes_since(rev)`.

Dense vectors are stored here too (table `embeddings`), so a second process or
a rebuild never has to run the model again for text that was already embedded.

The code is split by table group, each a small class over one `JournalDb` (the connection and the one write path,
`db.py`): `memories`, `forgetting` (the cascade), `anchors` (code links), `sources`, `sessions` (turns and gists),
`transcripts`, `browsing`, `archive` (export and import), `feed` (counters and changes) and `embeddings`.
Composition rather than mixins: a group can reach only the write path and the row helpers (`rows.py`), and what
it shares with another group is a plain function called inside the same transaction (the import forgets through
`forgetting.scrub`), so no group depends on another's state. `Journal` opens the database and names each group's
operations, so its callers see one object with the operations they always had.
"""

from __future__ import annotations

from pathlib import Path

from project_ledger.storage.journal.anchors import Anchor, CodeLinks
from project_ledger.storage.journal.archive import Archive, Restored
from project_ledger.storage.journal.browsing import Browsing, Counts
from project_ledger.storage.journal.db import WAIT_SECONDS, JournalDb, storage_error
from project_ledger.storage.journal.embeddings import Embeddings
from project_ledger.storage.journal.feed import Change, ChangeFeed
from project_ledger.storage.journal.forgetting import Forgetting
from project_ledger.storage.journal.memories import Memories
from project_ledger.storage.journal.rows import iso_utc, utc_now
from project_ledger.storage.journal.sessions import Sessions
from project_ledger.storage.journal.sources import Sources
from project_ledger.storage.journal.transcripts import TranscriptOffsets

__all__ = ["WAIT_SECONDS", "Anchor", "Change", "Counts", "Journal", "Restored", "iso_utc", "storage_error", "utc_now"]


class Journal:
    """One journal file, its table groups over one connection, and their operations by name."""

    def __init__(self, path: Path, wait_seconds: float = WAIT_SECONDS) -> None:
        db = JournalDb(path, wait_seconds)
        self.path = path
        self.close, self.integrity, self.purge_wal = db.close, db.integrity, db.purge_wal

        memories = Memories(db)
        self.insert, self.set_pinned, self.touch = memories.insert, memories.set_pinned, memories.touch
        self.get, self.history, self.pinned = memories.get, memories.history, memories.pinned
        self.get_by_seqs, self.live_by_seq, self.live = memories.get_by_seqs, memories.live_by_seq, memories.live
        self.superseded_in_sessions = memories.superseded_in_sessions

        forgetting = Forgetting(db)
        self.forget, self.derived = forgetting.forget, forgetting.derived

        links = CodeLinks(db)
        self.anchors, self.settle_anchor = links.anchors, links.settle_anchor

        sources = Sources(db)
        self.sources, self.relations = sources.sources, sources.relations

        sessions = Sessions(db)
        self.session_memories, self.session_turn_count = sessions.session_memories, sessions.session_turn_count
        self.recent_turns, self.neighbours = sessions.recent_turns, sessions.neighbours
        self.gists, self.gist_methods, self.covered_turns = sessions.gists, sessions.gist_methods, sessions.covered_turns

        transcripts = TranscriptOffsets(db)
        self.transcript_offset, self.set_transcript_offset = transcripts.transcript_offset, transcripts.set_transcript_offset

        browsing = Browsing(db)
        self.browse, self.labels, self.counts = browsing.browse, browsing.labels, browsing.counts

        archive = Archive(db)
        self.dump, self.restore = archive.dump, archive.restore

        feed = ChangeFeed(db)
        self.rev, self.reindex_epoch, self.forget_count = feed.rev, feed.reindex_epoch, feed.forget_count
        self.journal_id, self.request_reindex = feed.journal_id, feed.request_reindex
        self.rev_and_indexable_count, self.changes_since = feed.rev_and_indexable_count, feed.changes_since

        embeddings = Embeddings(db)
        self.missing_embeddings, self.store_embeddings = embeddings.missing_embeddings, embeddings.store_embeddings
        self.count_missing_embeddings, self.vectors = embeddings.count_missing_embeddings, embeddings.vectors
