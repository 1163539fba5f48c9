"""The maintenance service: what keeps the derived data in step with the journal.

`LedgerService` answers agents and users; this service, built by the factory
beside it from the same journal, index sync, code service and embedder,
rebuilds the index, embeds what has no vector, scans the source tree and
verifies an index against the journal. The CLI's maintaining commands, `doctor`
and `migration` go through it, so no entry point reaches into those parts.
Everything here runs in the calling thread: these are the CLI's ways of doing
what a server does in the background.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from project_ledger.config import IndexKind, ProjectPaths
from project_ledger.errors import IndexUnavailable, InvalidArgument, StorageError
from project_ledger.memory.service import LedgerService
from project_ledger.models import EmbeddingStatus
from project_ledger.search.embedding import Embedder
from project_ledger.search.index import Compactable, SearchIndex
from project_ledger.storage.index_sync import IndexSync
from project_ledger.storage.journal import Counts, Journal

if TYPE_CHECKING:  # the code index's modules load with the code service (`factory.open_code_service`): a hook has none
    from project_ledger.code.indexer import ScanSummary
    from project_ledger.code.service import CodeService
    from project_ledger.code.store import CodeCounts
    from project_ledger.code.watch_state import WatchReport

Report = Callable[[str, int, int | None], None]
"""Progress: (step, done, total); total None while it is unknown."""


def quiet(step: str, done: int, total: int | None) -> None:
    """No progress reporting."""


class IndexCatalog(Protocol):
    """Where a project's search indexes live, as the factory opens them (`factory.SearchIndexes`)."""

    @property
    def opened(self) -> Mapping[IndexKind, SearchIndex]:
        """The latest index opened of each kind."""

    def name(self, kind: IndexKind) -> str:
        """The collection (server) or slot folder (embedded) of the index of `kind` opened last."""

    def check_available(self) -> None:
        """Raise `IndexUnavailable` now if the backend cannot be used, rather than after a long job."""

    def room_needed(self) -> int | None:
        """Free bytes the embedded memory index needs to load (or create) and write its shard; None on a server."""


@dataclass(frozen=True)
class Verified:
    """One index checked against the journal: where it is, how many points it holds and how many it should."""

    kind: IndexKind
    location: str
    name: str  # the collection on a server, the slot folder when embedded
    points: int
    expected: int


class MaintenanceService:
    def __init__(
        self,
        *,
        paths: ProjectPaths,
        journal: Journal,
        sync: IndexSync,
        embedder: Embedder,
        code: CodeService | None,
        indexes: IndexCatalog,
    ) -> None:
        self.paths = paths
        self._journal = journal
        self._sync = sync
        self._embedder = embedder
        self._code = code
        self._indexes = indexes

    # -- the journal -----------------------------------------------------------------

    def counts(self) -> Counts:
        """Live memories by kind, and how many are pinned, superseded and forgotten."""
        return self._journal.counts()

    def journal_problems(self) -> list[str]:
        """What SQLite's integrity checks find wrong with the journal (empty: sound)."""
        return self._journal.integrity()

    def journal_figures(self) -> tuple[int, int]:
        """The journal's revision and how many memories belong in the index at it, from one snapshot."""
        return self._journal.rev_and_indexable_count()

    def journal_id(self) -> str:
        return self._journal.journal_id()

    # -- the model -------------------------------------------------------------------

    def load_model(self) -> bool:
        """Load the embedding model in this thread; False if it cannot be (`model_status` says why)."""
        return self._embedder.load()

    def require_model(self) -> None:
        """Load the embedding model, or raise `IndexUnavailable` saying why it cannot be."""
        if not self._embedder.load():
            raise IndexUnavailable(f"the embedding model {self._embedder.identity} could not be loaded ({self._embedder.detail})")

    def model_status(self) -> EmbeddingStatus:
        return EmbeddingStatus(model=self._embedder.identity, state=self._embedder.state, detail=self._embedder.detail)

    # -- the memory index ---------------------------------------------------------------

    def open_index(self, *, bm25_only: bool = False) -> None:
        """Open this process's index now and catch it up with the journal; `IndexUnavailable`, with the reason, if
        it cannot be opened. Opening checks the index against the journal and rebuilds a damaged one.

        With `bm25_only`, this process's searches never wait for the embedding model (a client hook's)."""
        if bm25_only:
            self._sync.forgo_model()
        self._sync.open_now()
        self._sync.catch_up()

    def read_index_state(self) -> bool:
        """Describe this process's index from what its slot recorded, without opening it (for `status`); False when
        that is not known (a Qdrant server, an index written by an older version, a pending rebuild): open it then."""
        return self._sync.read_recorded()

    def try_open_index(self) -> bool:
        """Open this process's index if it can be (a write's near-duplicate check needs it, but must not fail for
        it); whether it opened. `LedgerService.remember` says why the check was skipped when it did not."""
        return self._sync.open_now()

    def catch_up_index(self) -> None:
        """Bring the open index up to the journal, vectors computed since it opened included."""
        self._sync.catch_up()

    def rebuild_index(self) -> int:
        """Rebuild the index from the journal (running servers rebuild theirs too); how many memories it holds."""
        return self._sync.rebuild()

    def index_figures(self, timeout: float) -> tuple[int, int] | None:
        """The index's (watermark, points); None if a rebuild holds it longer than `timeout` seconds."""
        return self._sync.figures(timeout=timeout)

    def index_room_needed(self) -> int | None:
        """Free bytes the embedded index needs to load and write its shard (below them it is held in memory); None
        on a Qdrant server."""
        return self._indexes.room_needed()

    def index_held_in_memory(self) -> bool:
        """Whether the index this process opened is held in memory for want of room on the disk."""
        index = self._indexes.opened.get("memories")
        return isinstance(index, Compactable) and index.held_in_memory

    def index_events(self) -> list[str]:
        """Rebuilds and repairs of the index since it opened."""
        return list(self._sync.events)

    def missing_vectors(self) -> int:
        """Memories without a vector for the current model."""
        return self._journal.count_missing_embeddings(self._embedder.identity)

    def embed_memories(self, report: Report = quiet) -> int:
        """Embed every memory that has no vector yet; the model is loaded only if one lacks it. How many were
        embedded (0 as well when the model cannot load: `model_status` says why)."""
        if not self.missing_vectors() or not self._embedder.load():
            return 0
        return self._sync.embed_all(lambda done, total: report("embedding memories", done, total))

    # -- the code index -------------------------------------------------------------------

    @property
    def has_code(self) -> bool:
        """Whether the code index is on (LEDGER_CODE_INDEX)."""
        return self._code is not None

    @property
    def watching(self) -> bool:
        """Whether a server follows edits with a file watcher (LEDGER_WATCH)."""
        return self._code is not None and self._code.watcher is not None

    def _require_code(self) -> CodeService:
        if self._code is None:
            raise InvalidArgument("the code index is turned off (LEDGER_CODE_INDEX=false); turn it on to index the source tree")
        return self._code

    def scan_code(self, report: Report = quiet) -> ScanSummary:
        """Index the source files that changed since the last scan."""
        return self._require_code().indexer.scan(lambda progress: report("parsing files", progress.done, progress.total or None))

    def code_out_of_date(self) -> tuple[int, int]:
        """Source files (new or changed, deleted) since the last scan."""
        return self._require_code().indexer.out_of_date()

    def code_watcher(self) -> WatchReport | None:
        """What the file watcher of a running process on this project (a server) reports, if one runs."""
        return self._require_code().watching_process()

    def code_counts(self) -> CodeCounts:
        return self._require_code().store.counts()

    def missing_symbol_vectors(self) -> int:
        """Symbols without a vector for the current model."""
        return self._require_code().search.pending_vectors()

    def embed_symbols(self, report: Report = quiet) -> int:
        """Embed every symbol that has no vector yet; the model is loaded only if one lacks it. How many were
        embedded (0 as well when the model cannot load)."""
        search = self._require_code().search
        if not search.pending_vectors() or not search.load_model():
            return 0
        return search.embed_all(lambda done, total: report("embedding symbols", done, total))

    def open_code_search(self) -> None:
        """Open the symbol search index now and catch it up; a failure is reported by the searches that need it."""
        if self._code is not None:
            self._code.search.open_now()

    def watcher_starts(self) -> bool:
        """Start a file watcher on the tree, as a server does, and stop it again: whether it ran."""
        from project_ledger.code.watcher import CodeWatcher

        code = self._require_code()
        watcher = CodeWatcher(self.paths.root, code.indexer)
        watcher.start()
        running = watcher.state == "running"
        watcher.stop()
        return running

    # -- verifying a rebuilt index ------------------------------------------------------------

    def check_backend(self) -> None:
        """Fail now, not after a long job, if the index backend cannot be used (see `IndexCatalog.check_available`)."""
        self._indexes.check_available()

    def build_memory_index(self) -> Verified:
        """Open the memory index and catch it up with the journal (an index the factory opens for a migration
        starts empty, so this fills it), then verify it."""
        self._sync.open_now()
        if self._sync.open_error is not None:
            raise IndexUnavailable(f"the memory index could not be built: {self._sync.open_error}; nothing was dropped")
        journal = self._journal
        return self._verify("memories", lambda rev: rev == journal.rev(), lambda: journal.rev_and_indexable_count()[1])

    def build_code_index(self) -> Verified:
        """The same for the symbol index, caught up with the code tables."""
        code = self._require_code()
        code.search.open_now()
        if code.search.error is not None:
            raise IndexUnavailable(f"the code index could not be built: {code.search.error}; nothing was dropped")
        # A code revision may change no symbol (a file's stat data only), so caught up means: no change after the watermark.
        store, model = code.store, code.search.model
        return self._verify("code", lambda rev: store.changes_since(rev, model, 1)[2] == rev, lambda: store.rev_and_count()[1])

    def _verify(self, kind: IndexKind, caught_up: Callable[[int], bool], expected: Callable[[], int]) -> Verified:
        """The index must have caught up with the journal (`caught_up(watermark)`) and hold one point per memory or
        symbol it should (`expected()`)."""
        index = self._indexes.opened[kind]
        with index.sync_lock():
            watermark = index.watermark()
            current, wanted, points = caught_up(watermark), expected(), index.count()
        if not current:
            raise StorageError(
                f"the journal changed while the {kind} index was built (the index reflects revision {watermark}): another "
                "process is writing to this ledger; stop it and migrate again"
            )
        name = self._indexes.name(kind)
        if points != wanted:
            raise IndexUnavailable(
                f"the {kind} index {name} holds {points} points but the journal has {wanted} to index; nothing was dropped. "
                "Migrate again; if it persists, run `project-ledger doctor`"
            )
        return Verified(kind=kind, location=index.location, name=name, points=points, expected=wanted)


@dataclass(frozen=True)
class Services:
    """The two services over one project, as the factory builds them: the ledger, which owns the journal, index and
    code index they share, and its maintenance. Closing the bundle closes them once."""

    ledger: LedgerService
    maintenance: MaintenanceService

    def close(self) -> None:
        self.ledger.close()
