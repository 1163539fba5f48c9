"""The journal: a SQLite database in WAL mode that is the ledger's source of truth.

Every memory is stored here in full and unmodified; the search index is derived
from it and can always be rebuilt. Several processes may share one journal:
SQLite serialises their writes, and every change takes the next value of a
global revision counter inside its own transaction, so `rev` order is commit
order and any process can catch its index up with `changes_since(rev)`.

Dense vectors are stored here too (table `embeddings`), so a second process or
a rebuild never has to run the model again for text that was already embedded.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from project_ledger.errors import InvalidArgument, JournalDamaged, MemoryForgotten, MemoryNotFound, StorageError
from project_ledger.models import Memory
from project_ledger.storage.backup import ExportedLink, ExportedMemory, ExportedSource
from project_ledger.storage.schema import MIGRATIONS
from project_ledger.text.injection import looks_like_instructions

WAIT_SECONDS = 15.0  # how long a write waits for another process's write lock by default
_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def utc_now() -> str:
    return _journal_date(datetime.now(UTC))


def iso_utc(epoch: float) -> str:
    """Epoch seconds in the journal's date format (`utc_now`'s)."""
    return _journal_date(datetime.fromtimestamp(epoch, UTC))


def _journal_date(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def iso_to_epoch(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def new_memory_id() -> str:
    """`m` plus 10 random base32 characters (50 bits): short enough for a model to copy exactly."""
    return "m" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(10))


@dataclass(frozen=True)
class Change:
    """One memory as of revision `rev`, in the shape the index needs."""

    seq: int
    rev: int
    live: bool
    text: str
    kind: str
    tags: list[str]
    session: str | None
    pinned: bool
    superseded: bool
    created: float
    vector: bytes | None


@dataclass(frozen=True)
class Anchor:
    """A memory's link to code: a file, or a symbol (`name`, its qualified name) in a file."""

    target: str  # "file" or "symbol"
    path: str
    name: str
    hash: str | None  # content hash when the memory was stored; None if it was not indexed yet


@dataclass
class Restored:
    """What an import did: memories added (tombstones among them), live ones it forgot, ids it left as they were,
    and secrets replaced on the way in."""

    added: int = 0
    tombstones: int = 0
    forgotten: int = 0
    kept: int = 0
    redacted: int = 0


@dataclass(frozen=True)
class Counts:
    by_kind: dict[str, int]
    pinned: int
    superseded: int
    forgotten: int


# A gist is a summary the ledger wrote: tagged exactly `gist` (a reserved tag `remember` refuses).
_CURRENT_GIST = (
    "kind = 'summary' AND EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value = 'gist') "
    "AND superseded_by IS NULL AND deleted_at IS NULL"
)

_MEMORY_COLUMNS = (
    "id, text, kind, tags, session, role, files, symbols, created_at, updated_at, pinned, "
    "superseded_by, deleted_at, access_count, last_accessed_at, suspicious"
)


def row_to_memory(row: Mapping[str, Any]) -> Memory:
    """A `memories` row as a `Memory` (a journal from before the `suspicious` column reads as not flagged)."""
    return Memory(
        id=row["id"],
        text=row["text"],
        kind=row["kind"],
        tags=json.loads(row["tags"]),
        session=row["session"],
        role=row["role"],
        files=json.loads(row["files"]),
        symbols=json.loads(row["symbols"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        pinned=bool(row["pinned"]),
        superseded_by=row["superseded_by"],
        deleted_at=row["deleted_at"],
        access_count=row["access_count"],
        last_accessed_at=row["last_accessed_at"],
        suspicious=bool(row["suspicious"]) if "suspicious" in row.keys() else False,
    )


def _read_only_filesystem(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def storage_error(exc: sqlite3.Error | OSError, path: Path, action: str = "written", waited: float = WAIT_SECONDS) -> StorageError:
    """The journal's failure in words that say what to do; and, where the cause cannot have touched what was stored
    (a lock, a read-only or full disk), that nothing acknowledged was lost."""
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return JournalDamaged(
            f"journal {path} could not be {action} ({text}): the file is damaged, and memories stored in its damaged parts "
            "may be lost; `project-ledger doctor` says how to save every memory that can still be read.",
            text,
        )
    harmless = True
    if "locked" in text or "busy" in text:
        hint = f"another process has held the journal's write lock for over {waited:g}s; retry shortly"
    elif "readonly" in text or "read-only" in text or _read_only_filesystem(path.parent):
        hint = f"the data directory is read-only; make {path.parent} writable"
    elif "full" in text or _disk_full(path.parent):
        hint = "the disk is full; free some space and retry"
    else:
        harmless = False
        hint = f"check that {path.parent} exists and is readable and writable, then `project-ledger doctor`"
    return StorageError(f"journal {path} could not be {action} ({text}): {hint}." + (" Nothing acknowledged earlier was lost." if harmless else ""))


def _disk_full(folder: Path) -> bool:
    """Less free space than a page of the WAL index (SQLite reports that as a disk I/O error when it opens)."""
    try:
        stat = os.statvfs(folder)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < 64 * 1024


class Journal:
    """Thread-safe access to one journal file. All writes go through `_write()`."""

    def __init__(self, path: Path, wait_seconds: float = WAIT_SECONDS) -> None:
        self.path = path
        self.wait_seconds = wait_seconds
        self._lock = threading.RLock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if _read_only_filesystem(path.parent):
                # SQLite would open a WAL journal whose -wal and -shm files a killed process left behind even here,
                # and the failure would surface later and elsewhere (the index); say what is wrong, now.
                raise OSError(errno.EROFS, "read-only file system", str(path.parent))
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=wait_seconds)
            self._db.row_factory = sqlite3.Row
            self._db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            self._db.execute("PRAGMA journal_mode = WAL")
            # FULL: a commit is on disk before `remember` is acknowledged, even across power loss.
            self._db.execute("PRAGMA synchronous = FULL")
            # Freed pages are zeroed, so forgotten text does not linger in the file.
            self._db.execute("PRAGMA secure_delete = ON")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
            raise storage_error(exc, path, "opened", wait_seconds) from exc
        self._wal_needs_purge = False

    @property
    def _busy_ms(self) -> int:
        return round(self.wait_seconds * 1000)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- plumbing ---------------------------------------------------------

    def _migrate(self) -> None:
        with self._write() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                migration(db)
                db.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; the write lock is taken up front so it cannot deadlock on upgrade."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, waited=self.wait_seconds) from exc
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(exc, self.path, waited=self.wait_seconds) from exc
                raise

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "read", self.wait_seconds) from exc

    @staticmethod
    def _next_rev(db: sqlite3.Connection) -> int:
        return db.execute("UPDATE counters SET value = value + 1 WHERE name = 'rev' RETURNING value").fetchone()[0]

    # -- memories -----------------------------------------------------------

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
        with self._write() as db:
            for source, _ in sources:
                self._require_live(db, source)
            if replaces_gist:
                current = db.execute(
                    f"SELECT id FROM memories WHERE {_CURRENT_GIST} AND session IS ? ORDER BY seq DESC LIMIT 1", (session,)
                ).fetchone()
                supersedes = current["id"] if current else None
            twin = db.execute(
                "SELECT id, pinned FROM memories WHERE content_hash = ? AND session IS ? AND kind = ? "
                "AND deleted_at IS NULL AND superseded_by IS NULL LIMIT 1",
                (digest, session, kind),
            ).fetchone()
            if supersedes is not None:
                self._require_live(db, supersedes)
            if twin is not None:
                db.execute(
                    "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?",
                    (now, twin["id"]),
                )
                if supersedes is not None and supersedes != twin["id"]:
                    self._supersede(db, supersedes, twin["id"], now)
                if pinned and not twin["pinned"]:
                    db.execute(
                        "UPDATE memories SET pinned = 1, updated_at = ?, rev = ? WHERE id = ?", (now, self._next_rev(db), twin["id"])
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
                    self._next_rev(db),
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
                found = dict(db.execute(f"SELECT id, seq FROM memories WHERE id IN ({marks})", [i for i, _ in sources]).fetchall())
                db.executemany(
                    "INSERT OR IGNORE INTO memory_sources (seq, source, relation) VALUES (?,?,?)",
                    [(seq, found[source], relation) for source, relation in sources],
                )
            return memory_id, True

    def _supersede(self, db: sqlite3.Connection, old: str, new: str, now: str) -> None:
        current = db.execute("SELECT superseded_by FROM memories WHERE id = ?", (old,)).fetchone()["superseded_by"]
        if current is not None and current != new:  # keeps each history a single chain
            raise InvalidArgument(f"memory {old!r} is already superseded by {current!r}; supersede {current!r} instead")
        db.execute(
            "UPDATE memories SET superseded_by = ?, updated_at = ?, rev = ? WHERE id = ?", (new, now, self._next_rev(db), old)
        )

    @staticmethod
    def _require_live(db: sqlite3.Connection, memory_id: str) -> sqlite3.Row:
        row = db.execute("SELECT seq, deleted_at FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        if row["deleted_at"] is not None:
            raise MemoryForgotten(memory_id)
        return row

    def _live_by_seq(self, column: str, values: Sequence[object], condition: str = "") -> dict[int, Memory]:
        """Live memories whose `column` is one of `values` (and that meet `condition`), by seq."""
        if not values:
            return {}
        marks = ",".join("?" * len(values))
        rows = self._read(
            f"SELECT seq, {_MEMORY_COLUMNS} FROM memories WHERE {column} IN ({marks}) AND deleted_at IS NULL {condition}",
            list(values),
        )
        return {row["seq"]: row_to_memory(row) for row in rows}

    def get_by_seqs(self, seqs: Sequence[int]) -> dict[int, Memory]:
        """Live memories for index point ids; forgotten ones are left out."""
        return self._live_by_seq("seq", seqs)

    def set_pinned(self, memory_id: str, pinned: bool) -> None:
        with self._write() as db:
            self._require_live(db, memory_id)
            db.execute(
                "UPDATE memories SET pinned = ?, updated_at = ?, rev = ? WHERE id = ?",
                (int(pinned), utc_now(), self._next_rev(db), memory_id),
            )

    def forget(self, memory_id: str) -> list[str]:
        """Scrub the text and everything derived from it, keeping a tombstone (id, kind, dates, links).

        Memories derived from it go too, in the same transaction: what was captured
        from a turn quotes it, and a gist quotes or paraphrases what it covers.
        Returns the ids of those derived memories (the chain is followed to the end).
        """
        with self._write() as db:
            row = db.execute("SELECT seq, deleted_at FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                raise MemoryNotFound(memory_id)
            if row["deleted_at"] is not None:
                return []
            derived = self._scrub(db, row["seq"])
        self._wal_needs_purge = True
        self.purge_wal()
        return derived

    def _scrub(self, db: sqlite3.Connection, first: int) -> list[str]:
        """Turn memory `first` and what derives from it into tombstones; returns the derived ids."""
        now = utc_now()
        pending, done, derived = [first], set(), []
        while pending:
            seq = pending.pop()
            if seq in done:
                continue
            done.add(seq)
            db.execute(
                "UPDATE memories SET text = '', tags = '[]', files = '[]', symbols = '[]', content_hash = NULL, "
                "role = NULL, pinned = 0, suspicious = 0, deleted_at = ?, updated_at = ?, rev = ? WHERE seq = ?",
                (now, now, self._next_rev(db), seq),
            )
            db.execute("DELETE FROM embeddings WHERE seq = ?", (seq,))
            db.execute("DELETE FROM memory_links WHERE seq = ?", (seq,))
            db.execute("UPDATE counters SET value = value + 1 WHERE name = 'forgets'")
            for child in db.execute(
                "SELECT m.seq, m.id FROM memory_sources s JOIN memories m ON m.seq = s.seq "
                "WHERE s.source = ? AND m.deleted_at IS NULL",
                (seq,),
            ).fetchall():
                if child["seq"] not in done:
                    derived.append(child["id"])
                    pending.append(child["seq"])
        return list(dict.fromkeys(derived))

    def derived(self, memory_id: str) -> list[Memory]:
        """The live memories that `forget(memory_id)` would erase with it: what derives from it, to the end of the
        chain, as `_scrub` follows it (a forgotten memory ends a chain). Oldest first."""
        rows = self._read(
            "WITH RECURSIVE derived(seq) AS ("
            " SELECT s.seq FROM memory_sources s JOIN memories m ON m.seq = s.seq"
            " WHERE s.source = (SELECT seq FROM memories WHERE id = ?) AND m.deleted_at IS NULL"
            " UNION SELECT s.seq FROM memory_sources s JOIN derived d ON s.source = d.seq"
            " JOIN memories m ON m.seq = s.seq WHERE m.deleted_at IS NULL)"
            f" SELECT {_MEMORY_COLUMNS} FROM memories WHERE seq IN (SELECT seq FROM derived) AND id != ? ORDER BY seq",
            (memory_id, memory_id),
        )
        return [row_to_memory(row) for row in rows]

    def purge_wal(self) -> bool:
        """Copy the WAL into the database and truncate it, so old page images of scrubbed rows leave the disk.

        A reader in another process can hold a full checkpoint back; then this
        returns False and the caller tries again later (the server's worker does,
        every second). It waits at most a moment for the lock, never the full
        busy timeout.
        """
        with self._lock:
            if not self._wal_needs_purge:
                return True
            try:
                self._db.execute("PRAGMA busy_timeout = 200")
                busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.Error:
                busy = 1
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            self._wal_needs_purge = bool(busy)
            return not busy

    def touch(self, ids: Sequence[str]) -> None:
        """Record that these memories were used: fetched by id, pinned, or stored again (access stats do not
        change the index)."""
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        with self._write() as db:
            db.execute(
                f"UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id IN ({marks})",
                (utc_now(), *ids),
            )

    def get(self, memory_id: str) -> Memory:
        rows = self._read(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        if not rows:
            raise MemoryNotFound(memory_id)
        return row_to_memory(rows[0])

    def history(self, memory_id: str) -> list[Memory]:
        """The supersession chain through `memory_id`, oldest first (forgotten links show as tombstones)."""
        chain = [self.get(memory_id)]
        while older := self._read(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE superseded_by = ?", (chain[0].id,)):
            chain.insert(0, row_to_memory(older[0]))
        while chain[-1].superseded_by is not None:
            chain.append(self.get(chain[-1].superseded_by))
        return chain

    def superseded_in_sessions(self, sessions: Sequence[str]) -> dict[int, Memory]:
        """Live memories that were superseded, from these sessions, by seq (index `memories_superseded`)."""
        return self._live_by_seq("session", sessions, "AND superseded_by IS NOT NULL")

    def vectors(self, seqs: Sequence[int], model: str) -> dict[int, bytes]:
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        rows = self._read(f"SELECT seq, vector FROM embeddings WHERE model = ? AND seq IN ({marks})", [model, *seqs])
        return {row[0]: row[1] for row in rows}

    def recent_turns(self, session: str, limit: int) -> list[Memory]:
        """The last `limit` live turns of a session, newest first."""
        rows = self._read(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE session = ? AND kind = 'turn' AND deleted_at IS NULL "
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
        rows = self._read(
            "SELECT c.seq, "
            "(SELECT MAX(m.seq) FROM memories m WHERE m.session = c.session AND m.kind = 'turn' AND m.deleted_at IS NULL "
            "AND m.seq < c.seq), "
            "(SELECT MIN(m.seq) FROM memories m WHERE m.session = c.session AND m.kind = 'turn' AND m.deleted_at IS NULL "
            "AND m.seq > c.seq) "
            f"FROM memories c WHERE c.seq IN ({marks}) AND c.kind = 'turn' AND c.session IS NOT NULL AND c.deleted_at IS NULL",
            list(seqs),
        )
        return {row[0]: [seq for seq in row[1:] if seq is not None] for row in rows}

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
        for row in self._read(sql + " ORDER BY m.seq", params):
            found.setdefault(row[0], []).append(Anchor(row[1], row[2], row[3], row[4]))
        return found

    def settle_anchor(self, memory_id: str, anchor: Anchor, digest: str) -> None:
        """Record the hash of a target that was not indexed yet when the memory was stored."""
        with self._write() as db:
            db.execute(
                "UPDATE memory_links SET hash = ? WHERE seq = (SELECT seq FROM memories WHERE id = ?) AND target = ? "
                "AND path = ? AND name = ? AND hash IS NULL",
                (digest, memory_id, anchor.target, anchor.path, anchor.name),
            )

    # -- client transcripts -------------------------------------------------

    def transcript_offset(self, session: str, transcript: str) -> int:
        """Where reading `transcript` into `session` stopped last time: 0 for one never read."""
        rows = self._read("SELECT byte_offset FROM transcript_offsets WHERE session = ? AND transcript = ?", (session, transcript))
        return rows[0][0] if rows else 0

    def set_transcript_offset(self, session: str, transcript: str, offset: int) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO transcript_offsets (session, transcript, byte_offset, updated_at) VALUES (?,?,?,?) "
                "ON CONFLICT (session, transcript) DO UPDATE SET byte_offset = excluded.byte_offset, updated_at = excluded.updated_at",
                (session, transcript, offset, utc_now()),
            )

    # -- sessions, gists and what memories derive from ---------------------

    def session_memories(self, session: str) -> list[Memory]:
        """Every live memory of a session (superseded ones included), oldest first."""
        return list(self._live_by_seq("session", [session], "ORDER BY seq").values())

    def session_turn_count(self, session: str) -> int:
        rows = self._read("SELECT COUNT(*) FROM memories WHERE session = ? AND kind = 'turn' AND deleted_at IS NULL", (session,))
        return rows[0][0]

    def gists(self, session: str | None = None, limit: int = 1) -> list[Memory]:
        """The current gists, newest first: of one session, or of any."""
        where = _CURRENT_GIST
        params: list[object] = []
        if session is not None:
            where += " AND session = ?"
            params.append(session)
        rows = self._read(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY seq DESC LIMIT ?", [*params, limit])
        return [row_to_memory(row) for row in rows]

    def gist_methods(self) -> dict[str, int]:
        """Current gists by the way they were written (their second tag: sampling or extractive)."""
        rows = self._read(
            f"SELECT json_extract(tags, '$[1]') AS method, COUNT(*) FROM memories WHERE {_CURRENT_GIST} GROUP BY method"
        )
        return {row[0] or "unknown": row[1] for row in rows}

    def covered_turns(self, gist_id: str) -> int:
        """How many of its session's turns a gist was written over."""
        rows = self._read(
            "SELECT COUNT(*) FROM memory_sources s JOIN memories g ON g.seq = s.seq JOIN memories t ON t.seq = s.source "
            "WHERE g.id = ? AND s.relation = 'covers' AND t.kind = 'turn'",
            (gist_id,),
        )
        return rows[0][0]

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
        for memory_id, source_id in self._read(sql, [*ids, *relations]):
            found.setdefault(memory_id, []).append(source_id)
        return found

    def live_by_seq(self, ids: Sequence[str]) -> dict[int, Memory]:
        """Live memories with these ids, by seq; unknown and forgotten ids are left out."""
        return self._live_by_seq("id", list(ids))

    def live(self, ids: Sequence[str]) -> dict[str, Memory]:
        """Live memories by id; unknown and forgotten ids are left out."""
        return {memory.id: memory for memory in self.live_by_seq(ids).values()}

    def pinned(self) -> list[Memory]:
        rows = self._read(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE pinned = 1 AND deleted_at IS NULL ORDER BY created_at"
        )
        return [row_to_memory(row) for row in rows]

    def counts(self) -> Counts:
        rows = self._read(
            "SELECT kind, COUNT(*) AS n FROM memories WHERE deleted_at IS NULL AND superseded_by IS NULL GROUP BY kind"
        )
        totals = self._read(
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

    # -- browsing (the web inspector) ---------------------------------------

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
        total = self._read(f"SELECT COUNT(*) FROM memories WHERE {where}", params)[0][0]
        rows = self._read(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY seq DESC LIMIT ? OFFSET ?", [*params, limit, offset])
        return [row_to_memory(row) for row in rows], total

    def labels(self, limit: int = 500) -> tuple[list[str], list[str]]:
        """The tags and the sessions live memories carry (the most recent `limit` sessions), for filter choices."""
        tags = self._read(
            "SELECT DISTINCT t.value FROM memories, json_each(memories.tags) t WHERE deleted_at IS NULL ORDER BY t.value"
        )
        sessions = self._read(
            "SELECT session FROM memories WHERE deleted_at IS NULL AND session IS NOT NULL GROUP BY session "
            "ORDER BY MAX(seq) DESC LIMIT ?",
            (limit,),
        )
        return [row[0] for row in tags], [row[0] for row in sessions]

    def relations(self, memory_id: str) -> list[tuple[str, str, str]]:
        """(relation, other memory's id, "from" or "to"): what this memory derives from, and what derives from it."""
        rows = self._read(
            "SELECT s.relation, src.id, 'from' FROM memory_sources s JOIN memories m ON m.seq = s.seq "
            "JOIN memories src ON src.seq = s.source WHERE m.id = ? "
            "UNION ALL SELECT s.relation, m.id, 'to' FROM memory_sources s JOIN memories m ON m.seq = s.seq "
            "JOIN memories src ON src.seq = s.source WHERE src.id = ? ORDER BY 3, 2",
            (memory_id, memory_id),
        )
        return [(row[0], row[1], row[2]) for row in rows]

    # -- health ------------------------------------------------------------

    def integrity(self) -> list[str]:
        """What SQLite's integrity and foreign-key checks, and a check of supersession links, find wrong (empty: sound).
        A check that cannot run through the file (a damaged page stops it) is itself a finding."""
        checks = {
            "integrity check": ("PRAGMA integrity_check", lambda row: None if row[0] == "ok" else row[0]),
            "foreign-key check": ("PRAGMA foreign_key_check", lambda row: f"{row[0]} row {row[1]} points at a missing {row[2]} row"),
            "supersession check": (
                (
                    "SELECT id, superseded_by FROM memories m WHERE superseded_by IS NOT NULL "
                    "AND NOT EXISTS (SELECT 1 FROM memories n WHERE n.id = m.superseded_by)"
                ),
                lambda row: f"memory {row[0]} is marked superseded by {row[1]}, which is not in the journal",
            ),
        }
        problems: list[str] = []
        with self._lock:
            for name, (sql, describe) in checks.items():
                try:
                    problems += [problem for row in self._db.execute(sql).fetchall() if (problem := describe(row))]
                except sqlite3.Error as exc:
                    problems.append(f"the {name} could not read the whole file ({exc})")
        return problems

    # -- export and import -------------------------------------------------

    def dump(self, batch: int = 500) -> list[ExportedMemory]:
        """Every memory, tombstones included, in the order stored, read in one transaction (a consistent snapshot)."""
        dumped: list[ExportedMemory] = []
        with self._lock:
            try:
                self._db.execute("BEGIN")
                after = 0
                while rows := self._db.execute(
                    f"SELECT seq, {_MEMORY_COLUMNS} FROM memories WHERE seq > ? ORDER BY seq LIMIT ?", (after, batch)
                ).fetchall():
                    first, after = rows[0]["seq"], rows[-1]["seq"]
                    links: dict[int, list[ExportedLink]] = {}
                    for seq, target, path, name, digest in self._db.execute(
                        "SELECT seq, target, path, name, hash FROM memory_links WHERE seq BETWEEN ? AND ? ORDER BY seq, target, path, name",
                        (first, after),
                    ):
                        links.setdefault(seq, []).append(ExportedLink(target=target, path=path, name=name, hash=digest))
                    sources: dict[int, list[ExportedSource]] = {}
                    for seq, source_id, relation in self._db.execute(
                        "SELECT s.seq, m.id, s.relation FROM memory_sources s JOIN memories m ON m.seq = s.source "
                        "WHERE s.seq BETWEEN ? AND ? ORDER BY s.seq, s.source, s.relation",
                        (first, after),
                    ):
                        sources.setdefault(seq, []).append(ExportedSource(id=source_id, relation=relation))
                    dumped.extend(
                        ExportedMemory(**row_to_memory(row).model_dump(), links=links.get(row["seq"], []), sources=sources.get(row["seq"], []))
                        for row in rows
                    )
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "read", self.wait_seconds) from exc
            finally:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")
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
            rows = self._read(f"SELECT id, deleted_at FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids)
            present.update({row[0]: row[1] is None for row in rows})
        for start in range(0, len(memories), batch):
            with self._write() as db:
                for memory in memories[start : start + batch]:
                    if memory.id not in present:
                        self._insert_exported(db, memory)
                        restored.added += 1
                        restored.tombstones += memory.deleted_at is not None
                    elif present[memory.id] and memory.deleted_at is not None:
                        seq = db.execute("SELECT seq FROM memories WHERE id = ?", (memory.id,)).fetchone()[0]
                        restored.forgotten += 1 + len(self._scrub(db, seq))
                        self._wal_needs_purge = True
                    else:
                        restored.kept += 1
        added = [memory for memory in memories if memory.id not in present]
        for start in range(0, len(added), batch):
            with self._write() as db:
                for memory in added[start : start + batch]:
                    self._relate_exported(db, memory)
        self.purge_wal()
        return restored

    def _insert_exported(self, db: sqlite3.Connection, memory: ExportedMemory) -> None:
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
                self._next_rev(db),
                int(live and looks_like_instructions(memory.text)),  # judged here: an export's own flag is not trusted
            ),
        )
        if not live:
            db.execute("UPDATE counters SET value = value + 1 WHERE name = 'forgets'")

    @staticmethod
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

    # -- the change feed the index follows ---------------------------------

    def rev(self) -> int:
        return self._read("SELECT value FROM counters WHERE name = 'rev'")[0][0]

    def reindex_epoch(self) -> int:
        return self._read("SELECT value FROM counters WHERE name = 'reindex'")[0][0]

    def forget_count(self) -> int:
        return self._read("SELECT value FROM counters WHERE name = 'forgets'")[0][0]

    def journal_id(self) -> str:
        """A random id made with the journal: names this project's collection on a shared Qdrant server."""
        return self._read("SELECT value FROM meta WHERE key = 'journal_id'")[0][0]

    def request_reindex(self) -> None:
        """Every process's index sees the new epoch at its next catch-up and rebuilds itself."""
        with self._write() as db:
            db.execute("UPDATE counters SET value = value + 1 WHERE name = 'reindex'")

    def rev_and_indexable_count(self) -> tuple[int, int]:
        """The revision and the number of memories that belong in the index at it (superseded ones included),
        read in one statement, so from one snapshot."""
        row = self._read(
            "SELECT (SELECT value FROM counters WHERE name = 'rev'), (SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL)"
        )[0]
        return row[0], row[1]

    def changes_since(self, rev: int, model: str, limit: int) -> list[Change]:
        rows = self._read(
            "SELECT m.seq, m.rev, m.deleted_at, m.text, m.kind, m.tags, m.session, m.pinned, m.superseded_by, "
            "m.created_at, e.vector FROM memories m LEFT JOIN embeddings e ON e.seq = m.seq AND e.model = ? "
            "WHERE m.rev > ? ORDER BY m.rev LIMIT ?",
            (model, rev, limit),
        )
        return [
            Change(
                seq=row["seq"],
                rev=row["rev"],
                live=row["deleted_at"] is None,
                text=row["text"],
                kind=row["kind"],
                tags=json.loads(row["tags"]),
                session=row["session"],
                pinned=bool(row["pinned"]),
                superseded=row["superseded_by"] is not None,
                created=iso_to_epoch(row["created_at"]),
                vector=row["vector"],
            )
            for row in rows
        ]

    def missing_embeddings(self, model: str, limit: int, *, changed_after: int | None = None) -> list[tuple[int, str]]:
        """Live memories without a vector for `model`, oldest first; with `changed_after`, only those whose
        revision is newer than it (an indexed read instead of a scan of every memory)."""
        since = "AND m.rev > ? " if changed_after is not None else ""
        rows = self._read(
            "SELECT m.seq, m.text FROM memories m LEFT JOIN embeddings e ON e.seq = m.seq AND e.model = ? "
            f"WHERE m.deleted_at IS NULL AND e.seq IS NULL {since}ORDER BY m.seq LIMIT ?",
            (model, *([changed_after] if changed_after is not None else []), limit),
        )
        return [(row["seq"], row["text"]) for row in rows]

    def count_missing_embeddings(self, model: str) -> int:
        return self._read(
            "SELECT COUNT(*) FROM memories m LEFT JOIN embeddings e ON e.seq = m.seq AND e.model = ? "
            "WHERE m.deleted_at IS NULL AND e.seq IS NULL",
            (model,),
        )[0][0]

    def store_embeddings(self, model: str, vectors: Sequence[tuple[int, bytes]]) -> None:
        """Save vectors and bump each memory's rev so every process's index picks them up."""
        with self._write() as db:
            for seq, vector in vectors:
                live = db.execute("SELECT 1 FROM memories WHERE seq = ? AND deleted_at IS NULL", (seq,)).fetchone()
                if live is None:  # forgotten while it was being embedded
                    continue
                db.execute("INSERT OR REPLACE INTO embeddings (seq, model, vector) VALUES (?, ?, ?)", (seq, model, vector))
                db.execute("UPDATE memories SET rev = ? WHERE seq = ?", (self._next_rev(db), seq))
