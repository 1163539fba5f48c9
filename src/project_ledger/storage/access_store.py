"""Access tokens and the audit trail, in the journal's database (tables from migration 5).

A separate connection from the journal's: these rows are small, written rarely,
and read on every HTTP request, and keeping them apart leaves the journal's
write path untouched. `forget` never touches these tables, and they hold no
memory text, so the audit trail outlives what it records without keeping it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from project_ledger.errors import StorageError
from project_ledger.storage.journal import WAIT_SECONDS, Journal, storage_error, utc_now


@dataclass(frozen=True)
class StoredToken:
    id: str
    name: str
    scope: str
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True)
class AuditEntry:
    at: str
    actor: str
    tool: str
    ids: list[str]


class AccessStore:
    """Rows of `access_tokens` and `audit`. Thread-safe; the journal file is migrated first."""

    def __init__(self, path: Path, wait_seconds: float = WAIT_SECONDS) -> None:
        self.path = path
        Journal(path, wait_seconds).close()  # creates or upgrades the schema, with its clear errors
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=wait_seconds)
            self._db.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            raise storage_error(exc, path, "opened", wait_seconds) from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _run(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path) from exc

    def add_token(self, token_id: str, name: str, scope: str, secret_hash: str) -> StoredToken:
        at = utc_now()
        try:
            self._run(
                "INSERT INTO access_tokens (id, name, scope, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                (token_id, name, scope, secret_hash, at),
            )
        except sqlite3.IntegrityError:
            raise StorageError(f"a token named {name!r} already exists; choose another name or revoke it first") from None
        return StoredToken(token_id, name, scope, at, None)

    def tokens(self) -> list[StoredToken]:
        rows = self._run("SELECT id, name, scope, created_at, revoked_at FROM access_tokens ORDER BY created_at")
        return [StoredToken(*row) for row in rows]

    def by_hash(self, secret_hash: str) -> StoredToken | None:
        """The live token with this secret's hash, if any."""
        rows = self._run(
            "SELECT id, name, scope, created_at, revoked_at FROM access_tokens WHERE secret_hash = ? AND revoked_at IS NULL",
            (secret_hash,),
        )
        return StoredToken(*rows[0]) if rows else None

    def revoke(self, name_or_id: str) -> StoredToken | None:
        """Revoke a live token by name or id; None when there is no such live token."""
        rows = self._run(
            "UPDATE access_tokens SET revoked_at = ? WHERE (name = ? OR id = ?) AND revoked_at IS NULL "
            "RETURNING id, name, scope, created_at, revoked_at",
            (utc_now(), name_or_id, name_or_id),
        )
        return StoredToken(*rows[0]) if rows else None

    def record(self, actor: str, tool: str, ids: Sequence[str]) -> None:
        self._run("INSERT INTO audit (at, actor, tool, ids) VALUES (?, ?, ?, ?)", (utc_now(), actor, tool, json.dumps(list(ids))))

    def audit(self, limit: int) -> list[AuditEntry]:
        """The latest `limit` entries, oldest first."""
        rows = self._run("SELECT at, actor, tool, ids FROM audit ORDER BY seq DESC LIMIT ?", (limit,))
        return [AuditEntry(at, actor, tool, json.loads(ids)) for at, actor, tool, ids in reversed(rows)]
