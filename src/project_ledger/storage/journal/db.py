"""One connection to the journal file, and the one write path every table group goes through.

The connection is opened in WAL mode with `synchronous = FULL` and `secure_delete`, and migrated to the current
schema. Every write is `write()`: one `BEGIN IMMEDIATE` transaction under one lock, so a process never deadlocks
on upgrading a read lock, and every change to a memory takes the next value of the revision counter (`next_rev`)
inside the transaction that makes it, so revision order is commit order across processes.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from project_ledger.errors import JournalDamaged, StorageError
from project_ledger.storage.schema import MIGRATIONS

WAIT_SECONDS = 15.0  # how long a write waits for another process's write lock by default


def _read_only_filesystem(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def storage_error(
    exc: sqlite3.Error | OSError, path: Path, action: str = "written", waited: float = WAIT_SECONDS
) -> StorageError:
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
    return StorageError(
        f"journal {path} could not be {action} ({text}): {hint}."
        + (" Nothing acknowledged earlier was lost." if harmless else "")
    )


def _disk_full(folder: Path) -> bool:
    """Less free space than a page of the WAL index (SQLite reports that as a disk I/O error when it opens)."""
    try:
        stat = os.statvfs(folder)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < 64 * 1024


def next_rev(db: sqlite3.Connection) -> int:
    """The next revision, taken inside the caller's write transaction."""
    return db.execute("UPDATE counters SET value = value + 1 WHERE name = 'rev' RETURNING value").fetchone()[0]


class JournalDb:
    """Thread-safe access to one journal file. All writes go through `write()`."""

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

    def _migrate(self) -> None:
        with self.write() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                migration(db)
                db.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
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

    def read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "read", self.wait_seconds) from exc

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every read made through it sees the same state of the journal."""
        with self._lock:
            try:
                self._db.execute("BEGIN")
                yield self._db
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "read", self.wait_seconds) from exc
            finally:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")

    def integrity(self) -> list[str]:
        """What SQLite's integrity and foreign-key checks, and a check of supersession links, find wrong (empty: sound).
        A check that cannot run through the file (a damaged page stops it) is itself a finding."""
        checks = {
            "integrity check": ("PRAGMA integrity_check", lambda row: None if row[0] == "ok" else row[0]),
            "foreign-key check": (
                "PRAGMA foreign_key_check",
                lambda row: f"{row[0]} row {row[1]} points at a missing {row[2]} row",
            ),
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

    def scrubbed(self) -> None:
        """Text was scrubbed: old page images of its rows stay in the WAL until `purge_wal` succeeds."""
        self._wal_needs_purge = True

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
