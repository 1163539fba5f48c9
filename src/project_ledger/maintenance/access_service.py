"""Who may do what: scoped access tokens, and the audit trail of destructive or administrative calls.

A token's secret is shown once, when it is created; only its SHA-256 is kept.
The secrets are 256 random bits, so a fast hash is enough: there is nothing
to brute-force that a slow hash would protect.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from project_ledger.config import ProjectPaths
from project_ledger.errors import InvalidArgument
from project_ledger.storage.access_store import AccessStore, AuditEntry, StoredToken

Scope = Literal["read", "write", "admin"]
SCOPES: tuple[Scope, ...] = ("read", "write", "admin")  # each includes what the ones before it may do
LOCAL = "local"
OWNER = "owner"
ANONYMOUS = "anonymous"
BUILT_IN = {  # the principals no token stands for, by the name the audit trail shows
    LOCAL: "calls made on this machine without a token (the CLI, a stdio server)",
    OWNER: "the holder of the server's own token (LEDGER_AUTH_TOKEN or the data directory's http_token)",
    ANONYMOUS: "every caller of a server or inspector started with --no-auth",
}
SECRET_PREFIX = "plt_"
TOKEN_NAME_CHARS = 64


def covers(granted: str, needed: str) -> bool:
    """Whether a token of scope `granted` may do what needs `needed` (an unknown scope covers nothing)."""
    if granted not in SCOPES or needed not in SCOPES:
        return False
    return SCOPES.index(granted) >= SCOPES.index(needed)  # type: ignore[arg-type]


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def folded(name: str) -> str:
    """A name as a reader would take it: case and Unicode compatibility forms (a fullwidth `ＯＷＮＥＲ`) set aside."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold()).strip()


@dataclass(frozen=True)
class Caller:
    """Who is calling: a token (its name, scope and id), or one of the `BUILT_IN` principals (no token id)."""

    name: str
    scope: Scope
    token_id: str | None = None

    @property
    def actor(self) -> str:
        """The caller in the audit trail and the rate limit. A token's carries its id, which no built-in name has,
        so even a token named `owner` before such names were refused is never taken for the owner."""
        return self.name if self.token_id is None else f"{self.name} ({self.token_id})"


class AccessService:
    """Create, list and revoke tokens; recognise a presented secret; record and read the audit trail."""

    def __init__(self, store: AccessStore, owner_token: str | None = None) -> None:
        self.store = store
        self.owner_token = owner_token

    @classmethod
    def open(cls, journal: Path, owner_token: str | None = None, wait_seconds: float = 15.0) -> AccessService:
        return cls(AccessStore(journal, wait_seconds), owner_token)

    @classmethod
    def of_project(cls, paths: ProjectPaths) -> AccessService:
        """The tokens and audit trail kept in this project's journal."""
        return cls.open(paths.journal)

    def close(self) -> None:
        self.store.close()

    def create(self, name: str, scope: str, actor: str = LOCAL) -> tuple[StoredToken, str]:
        """A new token and its secret (shown once; never stored)."""
        name = name.strip()
        if not name or len(name) > TOKEN_NAME_CHARS or not name.isprintable():
            raise InvalidArgument(f"a token name is 1 to {TOKEN_NAME_CHARS} printable characters, e.g. ci-bot or alice")
        if (built_in := folded(name)) in BUILT_IN:
            raise InvalidArgument(
                f"the token name {name!r} is reserved: the audit trail and the rate limit call {BUILT_IN[built_in]} "
                f"{built_in!r}. Pick another name for the token, e.g. {name}-bot or the name of who will use it"
            )
        if scope not in SCOPES:
            raise InvalidArgument(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        token = self.store.add_token("t" + secrets.token_hex(5), name, scope, secret_hash(secret))
        self.store.record(actor, "tokens.create", [token.id])
        return token, secret

    def tokens(self) -> list[StoredToken]:
        return self.store.tokens()

    def revoke(self, name_or_id: str, actor: str = LOCAL) -> StoredToken:
        token = self.store.revoke(name_or_id)
        if token is None:
            raise InvalidArgument(f"no live token is named or has the id {name_or_id!r}; `project-ledger tokens list` shows them")
        self.store.record(actor, "tokens.revoke", [token.id])
        return token

    def identify(self, secret: str) -> Caller | None:
        """The caller a presented secret belongs to, or None for an unknown or revoked one."""
        if self.owner_token is not None and hmac.compare_digest(secret.encode(), self.owner_token.encode()):
            return Caller(OWNER, "admin")
        if not secret.startswith(SECRET_PREFIX):
            return None
        token = self.store.by_hash(secret_hash(secret))  # looked up by hash: timing reveals nothing about the secret
        return Caller(token.name, token.scope, token.id) if token is not None else None  # type: ignore[arg-type]

    def record(self, actor: str, tool: str, ids: list[str]) -> None:
        self.store.record(actor, tool, ids)

    def audit(self, limit: int = 100) -> list[AuditEntry]:
        return self.store.audit(limit)
