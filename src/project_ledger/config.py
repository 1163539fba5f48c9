"""Settings, read once at the edge (CLI) and passed down as plain values.

Every option can come from a `LEDGER_*` environment variable. The Qdrant server
options also accept the unprefixed `QDRANT_URL` / `QDRANT_API_KEY` that Qdrant's
own tools use. The options are grouped by concern, one class each (`GROUPS`, in the order the docs list them);
`Settings` is all of them, read flat (`settings.hook_record`). The docs' settings tables are made from the fields'
descriptions (`docs/settings_table.py`).

The variables are read here, by name, rather than through pydantic-settings: every CLI call and hook is a new
process, and that package's import (asyncio among it) cost about 40 ms of each one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from project_ledger.project_root import DATA_DIR_NAME, find_project_root
from project_ledger.search.tuning import RankingParams

# What Qdrant accepts in a collection name and a shell or URL needs no quoting for.
COLLECTION_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
IndexKind = Literal["memories", "code"]
ENV_PREFIX = "LEDGER_"
# Options read from other variables than LEDGER_<NAME>, the first one set winning.
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "qdrant_url": ("LEDGER_QDRANT_URL", "QDRANT_URL"),
    "qdrant_api_key": ("LEDGER_QDRANT_API_KEY", "QDRANT_API_KEY"),
}


class ProjectSettings(BaseModel):
    """The project"""

    root: Path | None = Field(
        default=None,
        description="The project (`--root`). Default: git top-level of the working directory, else the nearest folder above "
        "it holding `.ledger/` or `project_context.md`, else the working directory.",
    )
    data_dir: Path | None = Field(
        default=None,
        description="Where the journal, the index and the hooks' log live (`--data-dir`), created with a `.gitignore` of `*`. "
        "Default: `<root>/.ledger`",
    )


class ModelSettings(BaseModel):
    """The embedding model"""

    embed_model: str | None = Field(
        default=None,
        description="Any fastembed model name; fastembed downloads it (this needs the network) unless `LEDGER_EMBED_MODEL_PATH` is "
        "set. Default: the bundled offline all-MiniLM-L6-v2 (int8)",
    )
    embed_model_path: Path | None = Field(default=None, description="A local directory holding the fastembed model's files.")
    embed_threads: int | None = Field(
        default=None, ge=1, description="Cores used for embedding, one ONNX thread each. Default: all cores"
    )


class QdrantSettings(BaseModel):
    """A Qdrant server or cluster instead of the embedded index"""

    qdrant_url: str | None = Field(
        default=None, description="The URL of a Qdrant server or cluster to keep the index on instead of the embedded one."
    )
    qdrant_api_key: str | None = Field(default=None, description="API key for the Qdrant server.")
    qdrant_path: Path | None = Field(
        default=None, description="qdrant-client local mode folder (development and tests of the server backend)."
    )
    qdrant_collection_prefix: str = Field(
        default="ledger",
        pattern=COLLECTION_NAME,
        description="First part of this project's collection names: `<prefix>-<project>-<journal id>-memories` and `-code`.",
    )
    qdrant_collection: str | None = Field(
        default=None,
        pattern=COLLECTION_NAME,
        description="Base name of this project's collections instead of `<prefix>-<project>-<journal id>` "
        "(they become `<base>-memories` and `<base>-code`).",
    )
    qdrant_shard_number: int | None = Field(
        default=None, ge=1, description="Shards per new collection. Default: the server's (one per node in a cluster)"
    )
    qdrant_replication_factor: int | None = Field(
        default=None, ge=1, description="Copies of each shard in a new collection. Default: the server's (1)"
    )
    qdrant_write_consistency_factor: int | None = Field(
        default=None, ge=1, description="Replicas that must acknowledge a write to a new collection. Default: the server's (1)"
    )

    @model_validator(mode="after")
    def _one_qdrant_target(self) -> Self:
        if self.qdrant_url and self.qdrant_path:
            raise ValueError("set either QDRANT_URL (a server) or LEDGER_QDRANT_PATH (local mode), not both")
        return self

    @property
    def uses_qdrant_server(self) -> bool:
        """Whether the index is on a Qdrant server (or qdrant-client's local mode) instead of the embedded shard."""
        return bool(self.qdrant_url or self.qdrant_path)

    def collection_name(self, paths: ProjectPaths, journal_id: str, kind: IndexKind) -> str:
        """One collection per project and kind: `<prefix>-<project>-<journal id>-memories` and `...-code`."""
        return f"{self.qdrant_collection or paths.collection_base(self.qdrant_collection_prefix, journal_id)}-{kind}"


class LimitSettings(BaseModel):
    """Limits"""

    journal_wait_seconds: float = Field(
        default=15.0,
        gt=0,
        le=600,
        description="How long a write waits for another process's write lock before it fails with an error.",
    )
    max_text_bytes: int = Field(default=64 * 1024, ge=1, description="Largest memory text accepted, in UTF-8 bytes.")
    max_k: int = Field(
        default=100, ge=1, le=100, description="Most results one recall may ask for (also ids per fetch), at most 100."
    )
    max_tags: int = Field(default=32, ge=1, description="Most tags on one memory.")
    max_label_chars: int = Field(default=200, ge=8, description="Longest tag, session, role, file or symbol name.")
    max_result_tokens: int = Field(
        default=25_000,
        ge=1_000,
        description="Largest result any tool returns, in tokens; also the upper bound of every `token_budget`. "
        "Claude Code warns above 25,000.",
    )
    instructions_tokens: int = Field(
        default=2000, ge=100, description="Cap on the session-start pack (`project_context.md` + pins), in tokens."
    )


class MemorySettings(BaseModel):
    """Recall and what is stored"""

    recency_half_life_days: float = Field(
        default=RankingParams.half_life_days,
        ge=0,
        description="Recall: a note or turn this many days old has lost half of its recency share (0: no decay).",
    )
    min_relevance: float = Field(
        default=RankingParams.floor,
        ge=0,
        le=1,
        description="Recall's relevance floor (cosine, or query-term coverage); callers may pass a lower one.",
    )
    near_duplicate_overlap: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="A new memory sharing this share of its content words (Jaccard) with a live one of its kind, "
        "with the same numbers, identifiers and negations, is not stored twice.",
    )
    restated_context_overlap: float = Field(
        default=0.6,
        gt=0,
        le=1,
        description="A memory whose content words are this much inside one block of `project_context.md` "
        "(and whose specifics all are) is flagged as restating it.",
    )
    reject_restated_context: bool = Field(default=False, description="Refuse memories that only restate `project_context.md`.")
    redact_secrets: bool = Field(
        default=True,
        description="Replace secrets (private keys, API tokens, JWTs, passwords in URLs or assigned to names like "
        "password or api_key) with `[REDACTED:<type>]` before anything is stored: memories, imports and code symbols.",
    )
    capture: bool = Field(
        default=True,
        description="Store the decisions, definitions, constraints and todos a turn clearly states as linked memories.",
    )


class GistSettings(BaseModel):
    """Session gists"""

    sampling: bool = Field(
        default=True, description="`summarize_session` asks the client's model when the client offers sampling."
    )
    sampling_timeout_seconds: float = Field(
        default=60.0, gt=0, description="How long one sampling request may take before the gist falls back to extractive."
    )
    sampling_chunk_tokens: int = Field(
        default=6000, ge=500, description="Largest sampling request, in tokens, instructions included (map-reduce beyond)."
    )
    sampling_max_requests: int = Field(default=12, ge=1, description="Sampling requests one gist may make.")
    compact_session_turns: int = Field(
        default=60,
        ge=2,
        description="A session this many turns long gets its gist kept current in the background, "
        "and `context` shows fewer of its raw recent turns.",
    )


class HookSettings(BaseModel):
    """Client hooks"""

    hook_record: bool = Field(default=True, description="Client hooks store the user's prompts and the agent's replies as turns.")
    hook_start_tokens: int = Field(
        default=1500, ge=0, description="Size of the session-start pack a SessionStart hook hands the agent, in tokens (0: none)."
    )
    hook_inject_tokens: int = Field(
        default=400, ge=0, description="Most tokens of memories a prompt hook injects before the agent answers (0: never inject)."
    )
    hook_inject_floor: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Relevance (share of the prompt's terms, on BM25) a memory needs to be injected into a prompt: "
        "stricter than recall's, since nothing asked for it.",
    )
    hook_wait_seconds: float = Field(
        default=2.0, gt=0, le=60, description="How long a hook waits for another process's journal write lock before it gives up."
    )


class HttpSettings(BaseModel):
    """The HTTP transport (`serve --transport http`) and the inspector"""

    auth_token: SecretStr | None = Field(
        default=None,
        description="The owner's bearer token for the HTTP transport and `inspect` (16 characters or more; required off "
        "loopback). Default: a random one in `<data dir>/http_token`",
    )
    auth_token_file: Path | None = Field(default=None, description="A file holding the token, instead of LEDGER_AUTH_TOKEN.")
    http_allowed_hosts: str = Field(
        default="",
        description="Extra Host header values the HTTP transport accepts, comma-separated (e.g. `ledger.internal:8765`, "
        "behind a reverse proxy).",
    )
    http_allowed_origins: str = Field(
        default="", description="Extra Origin header values the HTTP transport accepts, comma-separated."
    )
    http_rate_limit: int = Field(
        default=3000,
        ge=1,
        description="Requests one token may make per `LEDGER_HTTP_RATE_WINDOW_SECONDS` over HTTP; past it, 429.",
    )
    http_rate_window_seconds: float = Field(default=60.0, gt=0, le=3600, description="The rate limit's window.")

    @model_validator(mode="after")
    def _one_token_source(self) -> Self:
        if self.auth_token and self.auth_token_file:
            raise ValueError("set either LEDGER_AUTH_TOKEN or LEDGER_AUTH_TOKEN_FILE, not both")
        return self

    def http_token(self) -> str | None:
        """The HTTP transport's token, from the setting or the file (read now, surrounding whitespace dropped)."""
        if self.auth_token_file is not None:
            try:
                return self.auth_token_file.read_text().strip() or None
            except OSError as exc:
                raise ValueError(f"cannot read LEDGER_AUTH_TOKEN_FILE {self.auth_token_file}: {exc.strerror}") from None
        return self.auth_token.get_secret_value() if self.auth_token else None


class SharedServerSettings(BaseModel):
    """One server for every client of a project"""

    shared_server: bool = Field(
        default=False,
        description="stdio `serve --root` is a thin proxy to one server process shared by every client on the project "
        "(one model and index in memory; see docs/benchmarks.md, One server for every client).",
    )
    shared_idle_seconds: float = Field(
        default=300.0, ge=0, le=86400, description="How long the shared server outlives its last client before it exits."
    )


class CodeSettings(BaseModel):
    """The code index"""

    code_index: bool = Field(default=True, description="Index the project's source code (false: no code tools).")
    watch: bool = Field(default=True, description="Keep the code index current with a file watcher while serving.")
    code_max_file_bytes: int = Field(default=1024 * 1024, ge=1, description="Larger source files are skipped.")
    code_parse_workers: int | None = Field(
        default=None, ge=1, description="Processes parsing source files on a full index. Default: all cores, at most 4"
    )


class Settings(
    ProjectSettings,
    ModelSettings,
    LimitSettings,
    MemorySettings,
    GistSettings,
    HookSettings,
    CodeSettings,
    SharedServerSettings,
    HttpSettings,
    QdrantSettings,
):
    """Every setting, grouped by concern in the classes above. Values given here (the CLI's options) win over the
    environment's, which win over the defaults."""

    model_config = ConfigDict(extra="ignore")

    def __init__(self, **values: Any) -> None:
        super().__init__(**{**environment_values(os.environ), **values})


# The groups, in the order the settings tables list them (docs/settings_table.py).
GROUPS: tuple[type[BaseModel], ...] = Settings.__bases__


def environment_values(environ: Mapping[str, str]) -> dict[str, str]:
    """The options set in `environ`, by option name; variable names in any case, as the shell's may be."""
    upper = {key.upper(): value for key, value in environ.items() if key.upper().startswith((ENV_PREFIX, "QDRANT_"))}
    found: dict[str, str] = {}
    for name in Settings.model_fields:
        for variable in ENV_NAMES.get(name, (f"{ENV_PREFIX}{name.upper()}",)):
            if variable in upper:
                found[name] = upper[variable]
                break
    return found


def comma_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


@dataclass(frozen=True)
class ProjectPaths:
    root: Path
    data_dir: Path

    @property
    def journal(self) -> Path:
        return self.data_dir / "journal.sqlite3"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"

    @property
    def model_dir(self) -> Path:
        return self.data_dir / "model"

    @property
    def project_context(self) -> Path:
        return self.root / "project_context.md"

    def collection_base(self, prefix: str, journal_id: str) -> str:
        """A project's collections on a Qdrant server share this base: the prefix, a readable name and the
        journal's random id.

        The id, not the path, tells projects apart: two machines may check out
        different projects at the same path and share one Qdrant server.
        """
        slug = _NOT_SLUG.sub("-", self.root.name.lower()).strip("-")[:40] or "project"
        return f"{prefix}-{slug}-{journal_id}"


def resolve_paths(settings: Settings, cwd: Path) -> ProjectPaths:
    root = settings.root.expanduser().resolve() if settings.root else find_project_root(cwd)
    data_dir = settings.data_dir.expanduser().resolve() if settings.data_dir else root / DATA_DIR_NAME
    return ProjectPaths(root=root, data_dir=data_dir)
