"""The composition root: the only place that turns `Settings` into wired objects."""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from project_ledger.code.links import CodeAnchors
from project_ledger.config import IndexKind, ProjectPaths, Settings, resolve_paths
from project_ledger.errors import IndexUnavailable, StorageError
from project_ledger.file_lock import FileLock
from project_ledger.maintenance.service import MaintenanceService, Services
from project_ledger.memory.browsing import MemoryBrowser
from project_ledger.memory.project_context import ProjectContextFile
from project_ledger.memory.recall import Recall
from project_ledger.memory.service import LedgerService, Quality
from project_ledger.memory.session_gists import GistParams, SessionGists
from project_ledger.memory.session_start import SessionStartPack
from project_ledger.memory.validation import Limits
from project_ledger.search.embedding import Embedder, create_embedder, for_code
from project_ledger.search.index import MEMORY_PAYLOAD, PayloadType, SearchIndex, SlotState
from project_ledger.search.tuning import RankingParams
from project_ledger.storage.index_sync import IndexSync
from project_ledger.storage.journal import Journal
from project_ledger.storage.search_gateway import SearchGateway
from project_ledger.text.tokens import TokenCounter

if TYPE_CHECKING:  # loaded when used: most CLI commands need neither, and a hook never reads code
    from project_ledger.code.service import CodeService
    from project_ledger.maintenance.access_service import AccessService
    from project_ledger.maintenance.migration import Openers

LOCAL_TOKEN_FILE = "http_token"
SLOT_PREFIXES: dict[IndexKind, str] = {"memories": "edge", "code": "code"}  # embedded slots: index/<prefix>-<n>/


def payload_fields(kind: IndexKind) -> dict[str, PayloadType]:
    """The payload fields the index of `kind` indexes."""
    if kind == "memories":
        return MEMORY_PAYLOAD
    from project_ledger.code.search import CODE_PAYLOAD

    return CODE_PAYLOAD


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


def open_ledger(settings: Settings, cwd: Path, *, embedder: Embedder | None = None) -> LedgerService:
    """Open the journal now (fast); the index and the model open later, in the background (`LedgerService.start`).

    An `embedder` made earlier can be shared between ledgers of one process (the tests load the model once).
    """
    return open_services(settings, cwd, embedder=embedder).ledger


def open_services(settings: Settings, cwd: Path, *, rebuild: bool = False, embedder: Embedder | None = None) -> Services:
    """The ledger and its maintenance over one project's journal, index and code index.

    With `rebuild`, each search index is emptied as it opens, so that catching up fills it from the journal
    (a migration).
    """
    paths = resolve_paths(settings, cwd)
    prepare_data_dir(paths)
    journal = Journal(paths.journal, settings.journal_wait_seconds)
    if embedder is None:
        embedder = create_embedder(
            model=settings.embed_model,
            model_path=settings.embed_model_path,
            cache_dir=paths.model_dir,
            threads=settings.embed_threads,
        )
    indexes = SearchIndexes(settings=settings, paths=paths, journal=journal, embedder=embedder, rebuild=rebuild)
    sync = IndexSync(journal, lambda: indexes.open("memories"), embedder, read_slot=lambda: indexes.read_slot("memories"))
    gateway = SearchGateway(sync, journal)
    tokens = TokenCounter()
    gists = SessionGists(journal=journal, tokens=tokens, params=gist_params(settings), changed=sync.kick)
    code = (
        open_code_service(settings=settings, paths=paths, journal=journal, embedder=embedder, tokens=tokens, indexes=indexes)
        if settings.code_index
        else None
    )
    bounds = limits(settings)
    project_context = ProjectContextFile(paths.project_context)
    anchors = code.anchors() if code is not None else CodeAnchors(paths.root, None, lambda: False)
    ranking = RankingParams(half_life_days=settings.recency_half_life_days, floor=settings.min_relevance)
    ledger = LedgerService(
        paths=paths,
        journal=journal,
        sync=sync,
        gateway=gateway,
        limits=bounds,
        tokens=tokens,
        code=code,
        quality=quality(settings),
        gists=gists,
        project_context=project_context,
        anchors=anchors,
        retrieval=Recall(
            journal=journal, sync=sync, gateway=gateway, anchors=anchors, tokens=tokens, limits=bounds, params=ranking
        ),
        browsing=MemoryBrowser(journal=journal, anchors=anchors, limits=bounds),
        session_start=SessionStartPack(
            journal=journal,
            project_context=project_context,
            gists=gists,
            tokens=tokens,
            cap=bounds.instructions_tokens,
            data_dir=paths.data_dir,
        ),
    )
    maintenance = MaintenanceService(paths=paths, journal=journal, sync=sync, embedder=embedder, code=code, indexes=indexes)
    return Services(ledger=ledger, maintenance=maintenance)


def limits(settings: Settings) -> Limits:
    return Limits(
        max_text_bytes=settings.max_text_bytes,
        instructions_tokens=settings.instructions_tokens,
        max_k=settings.max_k,
        max_tags=settings.max_tags,
        max_label_chars=settings.max_label_chars,
        max_result_tokens=settings.max_result_tokens,
    )


def quality(settings: Settings) -> Quality:
    return Quality(
        near_duplicate=settings.near_duplicate_overlap,
        restated_context=settings.restated_context_overlap,
        reject_restated=settings.reject_restated_context,
        capture=settings.capture,
        redact=settings.redact_secrets,
    )


def gist_params(settings: Settings) -> GistParams:
    return GistParams(
        chunk_tokens=settings.sampling_chunk_tokens,
        max_requests=settings.sampling_max_requests,
        compact_turns=settings.compact_session_turns,
    )


class SearchIndexes:
    """Opens a project's two search indexes, memories and code symbols, on the configured backend.

    Embedded: a Qdrant Edge shard slot each (`edge-<n>`, `code-<n>`). Server: a collection each
    (`Settings.collection_name`), through one qdrant-client made on first use and shared, because local
    mode allows one client per folder and the two indexes open in two threads at once. With `rebuild`,
    each index is emptied as it opens, so that catching up fills it from the journal (a migration).
    """

    def __init__(
        self, *, settings: Settings, paths: ProjectPaths, journal: Journal, embedder: Embedder, rebuild: bool = False
    ) -> None:
        self._settings = settings
        self._paths = paths
        self._journal = journal
        self._embedders: dict[IndexKind, Embedder] = {"memories": embedder, "code": for_code(embedder)}
        self._rebuild = rebuild
        self._client_lock = threading.Lock()
        self._client: tuple[Any, str] | None = None
        self.opened: dict[IndexKind, SearchIndex] = {}  # the latest index opened of each kind

    def open(self, kind: IndexKind) -> SearchIndex:
        index = self._open_server(kind) if self._settings.uses_qdrant_server else self._open_embedded(kind)
        if self._rebuild:
            with index.sync_lock():
                index.reset(self._journal.reindex_epoch() if kind == "memories" else 0)  # the code index has no epochs
        self.opened[kind] = index
        return index

    def read_slot(self, kind: IndexKind) -> SlotState | None:
        """What the embedded slot of `kind` this process would open recorded, without opening it (None on a server:
        its collection is not described by a local file)."""
        if self._settings.uses_qdrant_server:
            return None
        from project_ledger.search.edge_index import EdgeIndex

        return EdgeIndex.read_slot(self._paths.index_dir, self._embedders[kind].identity, prefix=SLOT_PREFIXES[kind])

    def room_needed(self) -> int | None:
        """Free bytes the embedded memory index needs to load (or create) and write its shard; None on a server."""
        if self._settings.uses_qdrant_server:
            return None
        from project_ledger.search.edge_index import room_needed

        return room_needed(self._paths.index_dir, payload_fields("memories"), SLOT_PREFIXES["memories"])

    def _open_embedded(self, kind: IndexKind) -> SearchIndex:
        from project_ledger.search.edge_index import EdgeIndex

        return EdgeIndex.open_slot(
            index_dir=self._paths.index_dir,
            dim=self._embedders[kind].dim,
            embedder_identity=self._embedders[kind].identity,
            payload=payload_fields(kind),
            prefix=SLOT_PREFIXES[kind],
        )

    def _open_server(self, kind: IndexKind) -> SearchIndex:
        from project_ledger.search.qdrant_index import QdrantIndex

        client, location = self.client()
        return QdrantIndex(
            client,
            collection=self._settings.collection_name(self._paths, self._journal.journal_id(), kind),
            state_dir=self._paths.index_dir,
            dim=self._embedders[kind].dim,
            embedder_identity=self._embedders[kind].identity,
            payload=payload_fields(kind),
            location=location,
            owns_client=kind == "memories",  # the memory index closes the shared client, last
            create_options=collection_options(self._settings),
        )

    def name(self, kind: IndexKind) -> str:
        """The collection (server) or the slot folder (embedded) of the index of `kind` opened last."""
        if self._settings.uses_qdrant_server:
            return self._settings.collection_name(self._paths, self._journal.journal_id(), kind)
        return Path(self.opened[kind].location).name

    def check_available(self) -> None:
        """Fail now, not after a long job: the server must answer (and local mode's folder be free), and the embedded
        index's first slots, which the next server to start takes, must not be held by a running process."""
        kinds: list[IndexKind] = ["memories", "code"] if self._settings.code_index else ["memories"]
        if self._settings.uses_qdrant_server:
            if self._settings.qdrant_url:
                where, hint = self._settings.qdrant_url, "check QDRANT_URL, QDRANT_API_KEY and that the server is up"
            else:
                where, hint = f"local-mode folder {self._settings.qdrant_path}", "stop the process that has it open"
            try:
                client, _ = self.client()
                client.get_collections()
            except Exception as exc:  # noqa: BLE001 - refused, timed out, unauthorized or a local-mode folder in use: one message
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise IndexUnavailable(f"cannot use the Qdrant server at {where}: {reason}; {hint}") from None
            return
        self._paths.index_dir.mkdir(parents=True, exist_ok=True)
        for kind in kinds:
            if FileLock.is_held(self._paths.index_dir / f"{SLOT_PREFIXES[kind]}-0.lock"):
                raise IndexUnavailable(
                    f"the embedded {kind} index in {self._paths.index_dir} is in use by another process, most likely a running "
                    "`project-ledger serve` for this project; stop it and run the migration again"
                )

    def client(self) -> tuple[Any, str]:
        """The shared qdrant-client and a description of where it points."""
        with self._client_lock:
            if self._client is None:
                self._client = qdrant_client(self._settings)
            return self._client


def qdrant_client(settings: Settings) -> tuple[Any, str]:
    """A client for the configured Qdrant server (or local-mode folder) and a description of where it points."""
    from project_ledger.search.qdrant_index import QdrantIndex

    return QdrantIndex.client(settings.qdrant_url, settings.qdrant_api_key, settings.qdrant_path)


def collection_options(settings: Settings) -> dict[str, int]:
    """How a new collection is sharded and replicated; what is not set is left to the server."""
    options = {
        "shard_number": settings.qdrant_shard_number,
        "replication_factor": settings.qdrant_replication_factor,
        "write_consistency_factor": settings.qdrant_write_consistency_factor,
    }
    return {name: value for name, value in options.items() if value is not None}


def open_code_service(
    *,
    settings: Settings,
    paths: ProjectPaths,
    journal: Journal,
    embedder: Embedder,
    tokens: TokenCounter,
    indexes: SearchIndexes,
) -> CodeService:
    """The code index over the journal's database; its search points go to their own shard or collection."""
    from project_ledger.code.indexer import CodeIndexer
    from project_ledger.code.search import CodeSearch
    from project_ledger.code.service import CodeService
    from project_ledger.code.store import CodeStore
    from project_ledger.code.watch_state import WATCH_STATE_NAME

    store = CodeStore(journal.path)
    indexer = CodeIndexer(
        root=paths.root,
        store=store,
        max_file_bytes=settings.code_max_file_bytes,
        workers=settings.code_parse_workers,
        redact=settings.redact_secrets,
    )
    search = CodeSearch(store, lambda: indexes.open("code"), for_code(embedder))
    return CodeService(
        root=paths.root, store=store, indexer=indexer, search=search, tokens=tokens, watch=settings.watch,
        watch_state=paths.data_dir / WATCH_STATE_NAME, max_result_tokens=settings.max_result_tokens,
    )  # fmt: skip


def drop_server_collections(settings: Settings, cwd: Path) -> dict[str, bool]:
    """Delete the ledger's collections on its Qdrant server: collection -> whether it existed (and is now gone)."""
    from project_ledger.search.qdrant_index import QdrantIndex

    paths = resolve_paths(settings, cwd)
    journal = Journal(paths.journal, settings.journal_wait_seconds)
    try:
        journal_id = journal.journal_id()
    finally:
        journal.close()
    client, _ = qdrant_client(settings)
    try:
        names = [settings.collection_name(paths, journal_id, kind) for kind in ("memories", "code")]
        return {name: QdrantIndex.drop(client, name, paths.index_dir) for name in names}
    finally:
        client.close()


def migration_openers(cwd: Path) -> Openers:
    """What a migration opens, wired here so that `migration` builds nothing itself."""
    from project_ledger.maintenance.migration import Openers

    return Openers(
        services=lambda settings: open_services(settings, cwd),
        rebuilding=lambda settings: open_services(settings, cwd, rebuild=True),
        drop_collections=lambda settings: drop_server_collections(settings, cwd),
    )


def open_access(settings: Settings, cwd: Path, owner_token: str | None = None) -> AccessService:
    """Tokens and the audit trail of this project (in its journal file), recognising `owner_token` as the owner."""
    from project_ledger.maintenance.access_service import AccessService

    paths = resolve_paths(settings, cwd)
    prepare_data_dir(paths)
    return AccessService.open(paths.journal, owner_token, settings.journal_wait_seconds)


def local_token(settings: Settings, cwd: Path) -> tuple[str, bool]:
    """The data directory's `http_token` (mode 600), made with a random value if there is none; and whether it was
    made now. Loopback servers use it when no LEDGER_AUTH_TOKEN is set: other accounts can reach 127.0.0.1."""
    paths = resolve_paths(settings, cwd)
    prepare_data_dir(paths)
    path = paths.data_dir / LOCAL_TOKEN_FILE
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            os.chmod(path, 0o600)
            token = path.read_text().strip()
        except OSError as exc:
            raise StorageError(f"cannot read {path} ({exc.strerror}); delete it to get a new token") from exc
        if len(token) >= 16:
            return token, False
        raise StorageError(f"{path} holds no usable token; delete it to get a new one")
    except OSError as exc:
        raise StorageError(f"cannot create {path} ({exc.strerror}); check the data directory's permissions") from exc
    token = secrets.token_urlsafe(32)
    with os.fdopen(descriptor, "w") as out:
        out.write(token + "\n")
    return token, True
