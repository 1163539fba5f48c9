"""The journal database's schema, as numbered migrations applied in order (`PRAGMA user_version`)."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable

from project_ledger.text.injection import looks_like_instructions


def _m001_create_memories(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE memories (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            text TEXT NOT NULL,
            kind TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            session TEXT,
            role TEXT,
            files TEXT NOT NULL DEFAULT '[]',
            symbols TEXT NOT NULL DEFAULT '[]',
            content_hash TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            pinned INTEGER NOT NULL DEFAULT 0,
            superseded_by TEXT,
            deleted_at TEXT,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed_at TEXT,
            rev INTEGER NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX memories_rev ON memories(rev)")
    db.execute(
        "CREATE INDEX memories_dedup ON memories(content_hash, session) WHERE deleted_at IS NULL AND superseded_by IS NULL"
    )
    db.execute("CREATE INDEX memories_pinned ON memories(pinned) WHERE pinned = 1 AND deleted_at IS NULL")
    # One row per model: processes configured with different models must not overwrite each other's vectors.
    db.execute(
        "CREATE TABLE embeddings (seq INTEGER NOT NULL REFERENCES memories(seq), model TEXT NOT NULL, "
        "vector BLOB NOT NULL, PRIMARY KEY (seq, model))"
    )
    # rev: every change; reindex: `project-ledger reindex` requests; forgets: memories forgotten so far.
    db.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    db.execute("INSERT INTO counters (name, value) VALUES ('rev', 0), ('reindex', 0), ('forgets', 0)")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta (key, value) VALUES ('journal_id', ?)", (secrets.token_hex(8),))


def _m002_create_code_index(db: sqlite3.Connection) -> None:
    """The code-symbol index: files as last parsed, their definitions and references.

    `code_rev` orders changes to symbols the way `rev` orders memories', so a
    search index can follow them; `code_removed` remembers which symbol ids a
    revision dropped. Dense vectors are keyed by a hash of the embedded text, so
    a file re-parsed after an unrelated edit reuses the vectors of its
    unchanged symbols.
    """
    db.execute(
        """
        CREATE TABLE code_files (
            path TEXT PRIMARY KEY,
            language TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            hash TEXT NOT NULL,
            lines INTEGER NOT NULL,
            indexed_at TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE code_symbols (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            name TEXT NOT NULL,
            qualname TEXT NOT NULL,
            kind TEXT NOT NULL,
            language TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            signature TEXT NOT NULL,
            doc TEXT NOT NULL,
            parent TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            body_head TEXT NOT NULL,
            embed_hash TEXT NOT NULL,
            rev INTEGER NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX code_symbols_path ON code_symbols(path)")
    # One index serves exact (`name = ? COLLATE NOCASE AND name = ?`), case-insensitive and prefix lookups.
    db.execute("CREATE INDEX code_symbols_name ON code_symbols(name COLLATE NOCASE)")
    db.execute("CREATE INDEX code_symbols_qualname ON code_symbols(qualname)")
    db.execute("CREATE INDEX code_symbols_rev ON code_symbols(rev)")
    db.execute("CREATE INDEX code_symbols_embed ON code_symbols(embed_hash)")
    # One row per name, file and kind of use, with its lines: a third of the rows of one per use site.
    db.execute(
        "CREATE TABLE code_refs (name TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, lines TEXT NOT NULL, "
        "uses INTEGER NOT NULL)"
    )
    db.execute("CREATE INDEX code_refs_name ON code_refs(name)")
    db.execute("CREATE INDEX code_refs_path ON code_refs(path)")
    db.execute("CREATE TABLE code_removed (rev INTEGER NOT NULL, id INTEGER NOT NULL)")
    db.execute("CREATE INDEX code_removed_rev ON code_removed(rev)")
    db.execute(
        "CREATE TABLE code_vectors (embed_hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL, "
        "PRIMARY KEY (embed_hash, model)) WITHOUT ROWID"
    )
    # code_tree: bumped only when files' symbols change (code_rev also moves when vectors arrive).
    db.execute("INSERT INTO counters (name, value) VALUES ('code_rev', 0), ('code_tree', 0)")


def _m003_create_memory_links(db: sqlite3.Connection) -> None:
    """Memories anchored to code: a file, or a symbol in a file, with its content hash when the memory was stored.

    `hash` is NULL when the target was not indexed yet at that moment; the first
    lookup that finds it records the hash then. Also an index of superseded
    memories by session, which every recall consults to find outdated turns.
    """
    db.execute(
        "CREATE INDEX memories_superseded ON memories(session) WHERE superseded_by IS NOT NULL AND deleted_at IS NULL"
    )
    db.execute(
        "CREATE TABLE memory_links (seq INTEGER NOT NULL REFERENCES memories(seq), target TEXT NOT NULL, "
        "path TEXT NOT NULL, name TEXT NOT NULL, hash TEXT, PRIMARY KEY (seq, target, path, name)) WITHOUT ROWID"
    )


def _m004_create_memory_sources(db: sqlite3.Connection) -> None:
    """Memories derived from other memories: `source` is where `seq` came from.

    relation `captured`: a decision, definition, constraint or todo captured from a turn;
    `cites`: a gist bullet quotes the source; `covers`: a gist was written over the source turn.
    Forgetting a source forgets what was derived from it, so the index runs both ways.
    """
    db.execute(
        "CREATE TABLE memory_sources (seq INTEGER NOT NULL REFERENCES memories(seq), source INTEGER NOT NULL "
        "REFERENCES memories(seq), relation TEXT NOT NULL, PRIMARY KEY (seq, source, relation)) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX memory_sources_source ON memory_sources(source)")
    db.execute("CREATE INDEX memories_session ON memories(session, kind) WHERE deleted_at IS NULL")


def _m005_create_access(db: sqlite3.Connection) -> None:
    """Scoped access tokens (only a hash of each secret is kept) and the audit trail of destructive or
    administrative calls: who (a token's name, or `local`), what tool, when, and which ids; never any text.

    The audit table is never touched by `forget`, so it outlives what it records.
    """
    db.execute(
        "CREATE TABLE access_tokens (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, scope TEXT NOT NULL, "
        "secret_hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, revoked_at TEXT)"
    )
    db.execute(
        "CREATE TABLE audit (seq INTEGER PRIMARY KEY, at TEXT NOT NULL, actor TEXT NOT NULL, tool TEXT NOT NULL, "
        "ids TEXT NOT NULL DEFAULT '[]')"
    )


def _m006_flag_suspicious_memories(db: sqlite3.Connection) -> None:
    """`suspicious`: the text reads like an instruction to the model (`text/injection.py`), decided when it is
    written; memories already stored are judged now."""
    db.execute("ALTER TABLE memories ADD COLUMN suspicious INTEGER NOT NULL DEFAULT 0")
    flagged = [(seq,) for seq, text in db.execute("SELECT seq, text FROM memories WHERE deleted_at IS NULL") if looks_like_instructions(text)]
    db.executemany("UPDATE memories SET suspicious = 1 WHERE seq = ?", flagged)


def _m007_create_transcript_offsets(db: sqlite3.Connection) -> None:
    """How far each client transcript has been read into the journal: the byte offset just past the last complete
    line taken, per session and transcript file, so a hook or an import reads only what was added since."""
    db.execute(
        "CREATE TABLE transcript_offsets (session TEXT NOT NULL, transcript TEXT NOT NULL, byte_offset INTEGER NOT NULL, "
        "updated_at TEXT NOT NULL, PRIMARY KEY (session, transcript)) WITHOUT ROWID"
    )


def _m008_reparse_for_import_aliases(db: sqlite3.Connection) -> None:
    """The tags queries now count an import's alias as a use (`from .markup import render as render_markup`):
    forget each file's modification time and content hash, so the next scan parses every file again, once,
    instead of keeping the references the old queries found."""
    db.execute("UPDATE code_files SET hash = '', mtime_ns = -1")


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _m001_create_memories,
    _m002_create_code_index,
    _m003_create_memory_links,
    _m004_create_memory_sources,
    _m005_create_access,
    _m006_flag_suspicious_memories,
    _m007_create_transcript_offsets,
    _m008_reparse_for_import_aliases,
)
