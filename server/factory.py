"""The composition root: the only place that turns `Settings` into wired objects."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from project_ledger.indexers.embedding import Embedder, create_embedder
from project_ledger.indexers.search_index import MEMORY_PAYLOAD, PayloadType, SearchIndex

from .code_indexer import CodeIndexer
from .code_search import CODE_PAYLOAD, CodeSearch
from .code_service import CodeService
from .code_store import CodeStore
from .config import ProjectPaths, Settings, resolve_paths
from .errors import StorageError
from .index_sync import IndexSync
from .journal import Journal
from .ledger import LedgerService, Limits, Quality
from .ranking import RankingParams
from .session_gists import GistParams, SessionGists
from .tokens import TokenCounter


def prepare_data_dir(paths: ProjectPaths) -> None:
    """Create the data directory, private to its owner, with a `.gitignore` of `*`, so its contents are never
    committed by accident."""
    try:
        paths.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        ignore = paths.data_dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# project-ledger data: journal, index, model links\n*\n")
    except OSError as exc:
        raise StorageError(
            f"cannot use data directory {paths.data_dir} ({exc.strerror}); make it writable or choose another with --data-dir"
        ) from exc


def open_ledger(settings: Settings, cwd: Path) -> LedgerService:
    """Open the journal now (fast); the index and the model open later, in `ledger.sync`."""
    paths = resolve_paths(settings, cwd)
    prepare_data_dir(paths)
    journal = Journal(paths.journal, settings.journal_wait_seconds)
    embedder = create_embedder(settings.embed_model, settings.embed_model_path, paths.model_dir, settings.embed_threads)

    client_lock = threading.Lock()  # the memory and code indexes open in two threads at once

    @cache
    def make_client() -> tuple[Any, str]:
        from project_ledger.indexers.qdrant_index import QdrantIndex

        return QdrantIndex.client(settings.qdrant_url, settings.qdrant_api_key, settings.qdrant_path)

    def qdrant_client() -> tuple[Any, str]:
        with client_lock:
            return make_client()

    def open_index() -> SearchIndex:
        return open_search_index(settings, paths, journal, embedder, MEMORY_PAYLOAD, qdrant_client, "")

    sync = IndexSync(journal, open_index, embedder)
    tokens = TokenCounter()
    ranking = RankingParams(half_life_days=settings.recency_half_life_days, floor=settings.min_relevance)
    quality = Quality(
        settings.near_duplicate_overlap,
        settings.restated_context_overlap,
        settings.reject_restated_context,
        settings.capture,
        settings.redact_secrets,
    )
    gists = SessionGists(
        journal,
        tokens,
        GistParams(settings.sampling_chunk_tokens, settings.sampling_max_requests, settings.compact_session_turns),
        sync.kick,
    )
    code = (
        open_code_service(settings, paths, journal, embedder, tokens, qdrant_client) if settings.code_index else None
    )
    limits = Limits(
        settings.max_text_bytes,
        settings.instructions_tokens,
        settings.max_k,
        settings.max_tags,
        settings.max_label_chars,
        settings.max_result_tokens,
    )
    return LedgerService(paths, journal, sync, limits, tokens, code, ranking, quality, gists)


def open_search_index(
    settings: Settings,
    paths: ProjectPaths,
    journal: Journal,
    embedder: Embedder,
    payload: dict[str, PayloadType],
    qdrant_client: Callable[[], tuple[Any, str]],
    suffix: str,
) -> SearchIndex:
    """The embedded shard (slots named `edge-<n>`, or `code-<n>` for symbols) or a collection on a Qdrant server."""
    if settings.qdrant_url or settings.qdrant_path:
        from project_ledger.indexers.qdrant_index import QdrantIndex

        client, location = qdrant_client()
        collection = settings.qdrant_collection or paths.collection_name(journal.journal_id())
        return QdrantIndex(
            client,
            collection=f"{collection}-{suffix}" if suffix else collection,
            state_dir=paths.index_dir,
            dim=embedder.dim,
            embedder_identity=embedder.identity,
            payload=payload,
            location=location,
            owns_client=not suffix,  # the memory index closes the shared client, last
        )
    from project_ledger.indexers.edge_index import EdgeIndex

    return EdgeIndex.open_slot(paths.index_dir, embedder.dim, embedder.identity, payload, prefix=suffix or "edge")


def open_code_service(
    settings: Settings,
    paths: ProjectPaths,
    journal: Journal,
    embedder: Embedder,
    tokens: TokenCounter,
    qdrant_client: Callable[[], tuple[Any, str]],
) -> CodeService:
    """The code index over the journal's database; its search points go to their own shard or collection."""
    store = CodeStore(journal.path)
    indexer = CodeIndexer(paths.root, store, settings.code_max_file_bytes, settings.code_parse_workers, settings.redact_secrets)
    search = CodeSearch(
        store, lambda: open_search_index(settings, paths, journal, embedder, CODE_PAYLOAD, qdrant_client, "code"), embedder
    )
    return CodeService(paths.root, store, indexer, search, tokens, settings.watch)
