"""The composition root: the only place that turns `Settings` into wired objects."""

from __future__ import annotations

from pathlib import Path

from project_ledger.indexers.embedding import create_embedder
from project_ledger.indexers.memory_index import MemoryIndex

from .config import ProjectPaths, Settings, resolve_paths
from .errors import StorageError
from .index_sync import IndexSync
from .journal import Journal
from .ledger import LedgerService, Limits


def prepare_data_dir(paths: ProjectPaths) -> None:
    """Create the data directory with a `.gitignore` of `*`, so its contents are never committed by accident."""
    try:
        paths.data_dir.mkdir(parents=True, exist_ok=True)
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
    journal = Journal(paths.journal)
    embedder = create_embedder(settings.embed_model, settings.embed_model_path, paths.model_dir, settings.embed_threads)

    def open_index() -> MemoryIndex:
        if settings.qdrant_url or settings.qdrant_path:
            from project_ledger.indexers.qdrant_index import QdrantIndex

            return QdrantIndex.connect(
                settings.qdrant_url,
                settings.qdrant_api_key,
                settings.qdrant_path,
                collection=settings.qdrant_collection or paths.collection_name(journal.journal_id()),
                state_dir=paths.index_dir,
                dim=embedder.dim,
                embedder_identity=embedder.identity,
            )
        from project_ledger.indexers.edge_index import EdgeIndex

        return EdgeIndex.open_slot(paths.index_dir, embedder.dim, embedder.identity)

    sync = IndexSync(journal, open_index, embedder)
    return LedgerService(paths, journal, sync, Limits(settings.max_text_bytes, settings.instructions_tokens))
