"""Records the ledger hands back. Plain pydantic, so the MCP layer can publish
them as output schemas and the CLI can print them as JSON."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Kind = Literal["note", "decision", "definition", "todo", "error", "turn", "summary"]
KINDS: tuple[str, ...] = ("note", "decision", "definition", "todo", "error", "turn", "summary")
RecallMode = Literal["hybrid", "bm25-only"]


class Memory(BaseModel):
    """A memory as the journal holds it."""

    id: str
    text: str
    kind: str
    tags: list[str] = Field(default_factory=list)
    session: str | None = None
    role: str | None = None
    files: list[str] = Field(default_factory=list)
    symbols: list[str] = Field(default_factory=list)
    created_at: str
    updated_at: str
    pinned: bool = False
    superseded_by: str | None = None
    deleted_at: str | None = None
    access_count: int = 0
    last_accessed_at: str | None = None


class RememberResult(BaseModel):
    id: str
    created: bool = Field(description="False when the same text already exists in the same session.")
    duplicate_of: str | None = None


class RecallHit(BaseModel):
    id: str
    text: str
    kind: str
    tags: list[str]
    session: str | None
    role: str | None
    created_at: str
    pinned: bool
    superseded_by: str | None = None
    score: float


class RecallResult(BaseModel):
    results: list[RecallHit]
    tokens: int = Field(description="tiktoken (cl100k) count of the results' rendered text.")
    mode: RecallMode
    note: str | None = Field(default=None, description="Why the mode is degraded or results were cut, if they were.")


class Ack(BaseModel):
    id: str
    ok: bool


class EmbeddingStatus(BaseModel):
    model: str
    state: Literal["not-loaded", "loading", "ready", "failed"]
    detail: str | None = None


class IndexStatus(BaseModel):
    backend: str
    location: str
    state: Literal["opening", "ready", "failed"]
    indexed_rev: int
    journal_rev: int
    lag: int = Field(description="Journal changes not yet applied to the index.")
    missing_embeddings: int = Field(description="Live memories with no dense vector yet (still found by BM25).")
    events: list[str] = Field(default_factory=list, description="What happened to the index since start (rebuilds, repairs).")


class Status(BaseModel):
    version: str
    root: str
    data_dir: str
    journal: str
    counts: dict[str, int] = Field(description="Live memories by kind.")
    pinned: int
    superseded: int
    forgotten: int
    project_context: str | None = Field(description="Path of project_context.md, or None when it is missing.")
    index: IndexStatus
    embedding: EmbeddingStatus


class SessionStart(BaseModel):
    text: str
    tokens: int
    truncated: bool
