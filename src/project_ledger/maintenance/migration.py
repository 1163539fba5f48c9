"""Moving a project's search indexes between the embedded shard and a Qdrant server, and a ledger between data
directories.

The journal (SQLite, in the data directory) is the truth; every index is derived from it. So a migration
is: optionally copy the journal's memories into another data directory through the export format (checked
against the export's header), embed every memory and symbol that has no vector yet, rebuild the target
backend's indexes from the journal, and check that each holds exactly what the journal says it should.
Nothing is dropped until that check has passed.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from project_ledger.code.service import CodeService
from project_ledger.config import IndexKind, Settings, resolve_paths
from project_ledger.errors import IndexUnavailable, InvalidArgument, StorageError
from project_ledger.factory import SearchIndexes, open_ledger, open_ledger_with_indexes, qdrant_client
from project_ledger.memory.service import LedgerService
from project_ledger.storage.journal import Journal

Target = Literal["server", "embedded"]
Report = Callable[[str, int, int | None], None]
"""Progress: (step, done, total); total None while it is unknown."""


def _quiet(step: str, done: int, total: int | None) -> None:
    """No progress reporting."""


@dataclass(frozen=True)
class Moved:
    """What `into` received: the export's header counts, found again in the target journal."""

    source: str
    memories: int
    tombstones: int


@dataclass(frozen=True)
class Verified:
    """One rebuilt index: where it is, how many points it holds and how many the journal says it should."""

    kind: IndexKind
    location: str
    name: str  # the collection on a server, the slot folder when embedded
    points: int
    expected: int


@dataclass(frozen=True)
class Migration:
    target: Target
    data_dir: str
    journal_id: str
    moved: Moved | None
    indexes: list[Verified]
    dropped: dict[str, bool]  # server collection -> whether it existed (and is now gone)
    seconds: float


def migrate(
    settings: Settings,
    cwd: Path,
    target: Target,
    into: Path | None = None,
    drop_server_collections: bool = False,
    report: Report = _quiet,
) -> Migration:
    """Build `target`'s indexes from the journal (after moving the ledger to `into`, if given) and verify them.

    `settings` describe the ledger as it is; the Qdrant settings name the server the indexes go to
    (`target="server"`) or whose collections `drop_server_collections` removes once the embedded
    index is verified (`target="embedded"`).
    """
    started = time.perf_counter()
    source = resolve_paths(settings, cwd)
    _check(settings, target, into, source.data_dir, drop_server_collections)
    update: dict[str, object] = {"data_dir": into.expanduser().resolve()} if into is not None else {}
    if target == "embedded":
        update |= {"qdrant_url": None, "qdrant_path": None}
    destination = settings.model_copy(update=update)
    moved = _move(settings, destination, cwd, report) if into is not None else None
    indexes, journal_id = _build(destination, cwd, target, report)
    dropped = _drop_collections(settings, cwd) if drop_server_collections else {}
    data_dir = resolve_paths(destination, cwd).data_dir
    return Migration(target, str(data_dir), journal_id, moved, indexes, dropped, time.perf_counter() - started)


def _check(settings: Settings, target: Target, into: Path | None, data_dir: Path, drop: bool) -> None:
    if drop and target == "server":
        raise InvalidArgument("server collections can only be dropped when migrating to the embedded index")
    if target == "server" and not settings.uses_qdrant_server:
        raise InvalidArgument(
            "there is no Qdrant server to migrate to: set QDRANT_URL (and QDRANT_API_KEY if it needs one), "
            "or LEDGER_QDRANT_PATH for qdrant-client's local mode"
        )
    if drop and not settings.uses_qdrant_server:
        raise InvalidArgument("to drop the server collections, set QDRANT_URL (or LEDGER_QDRANT_PATH) to the server that holds them")
    if into is not None and target == "server" and settings.qdrant_collection:
        raise InvalidArgument(
            "LEDGER_QDRANT_COLLECTION gives every ledger that uses it the same collections; unset it to move into another "
            "data directory (the moved ledger's collections are named after its own journal)"
        )
    if into is not None and into.expanduser().resolve() == data_dir:
        raise InvalidArgument(f"{data_dir} is this ledger's own data directory; to rebuild its index in place, leave out the target directory")


def _move(settings: Settings, destination: Settings, cwd: Path, report: Report) -> Moved:
    """Copy every memory, tombstones included, into an empty ledger in another data directory, through the
    export format, and check the target journal holds what the export's header promised."""
    report("moving memories", 0, None)
    target = open_ledger(destination, cwd)
    try:
        _require_empty(target)
        source = open_ledger(settings, cwd)
        try:
            # The export holds memory text: it stays in the target's private data directory, and is gone when closed.
            with tempfile.TemporaryFile("w+", encoding="utf-8", dir=target.paths.data_dir) as buffer:
                header = source.export(buffer)
                buffer.seek(0)
                target.import_export(buffer)
        finally:
            source.close()
        _, live = target.journal.rev_and_indexable_count()
        tombstones = target.journal.counts().forgotten
        if (live, tombstones) != (header.memories, header.tombstones):
            raise StorageError(
                f"{target.paths.data_dir} holds {live} memories and {tombstones} tombstones after the import, but the export "
                f"held {header.memories} and {header.tombstones}; the source ledger is unchanged"
            )
        report("moving memories", live + tombstones, live + tombstones)
        return Moved(str(source.paths.data_dir), header.memories, header.tombstones)
    finally:
        target.close()


def _require_empty(ledger: LedgerService) -> None:
    _, live = ledger.journal.rev_and_indexable_count()
    forgotten = ledger.journal.counts().forgotten
    if live or forgotten:
        raise InvalidArgument(
            f"{ledger.paths.data_dir} already holds a ledger ({live} memories, {forgotten} forgotten); move into a new or "
            "empty data directory, merge with `project-ledger import`, or rebuild that ledger's index by migrating it "
            "without a target directory"
        )


def _build(settings: Settings, cwd: Path, target: Target, report: Report) -> tuple[list[Verified], str]:
    """Embed what has no vector, rebuild both indexes of the ledger `settings` describe, and verify them."""
    ledger, indexes = open_ledger_with_indexes(settings, cwd, rebuild=True)
    try:
        indexes.check_available()
        _embed_memories(ledger, report)
        if ledger.code is not None:
            _scan_and_embed_code(ledger.code, report)
        _, expected = ledger.journal.rev_and_indexable_count()
        report("indexing memories", 0, expected)
        ledger.sync.open_now()
        if ledger.sync.open_error is not None:
            raise IndexUnavailable(f"the {target} memory index could not be built: {ledger.sync.open_error}")
        journal = ledger.journal
        verified = [_verify(indexes, "memories", lambda rev: rev == journal.rev(), lambda: journal.rev_and_indexable_count()[1])]
        report("indexing memories", verified[0].points, expected)
        if ledger.code is not None:
            code = ledger.code
            _, symbols = code.store.rev_and_count()
            report("indexing symbols", 0, symbols)
            code.search.open_now()
            if code.search.error is not None:
                raise IndexUnavailable(f"the {target} code index could not be built: {code.search.error}")
            # A code revision may change no symbol (a file's stat data only), so caught up means: no change after the watermark.
            store, model = code.store, ledger.sync.embedder.identity
            verified.append(
                _verify(indexes, "code", lambda rev: store.changes_since(rev, model, 1)[2] == rev, lambda: store.rev_and_count()[1])
            )
            report("indexing symbols", verified[-1].points, symbols)
        return verified, ledger.journal.journal_id()
    finally:
        ledger.close()


def _embed_memories(ledger: LedgerService, report: Report) -> None:
    embedder = ledger.sync.embedder
    if not embedder.load():
        raise IndexUnavailable(f"the embedding model {embedder.identity} could not be loaded ({embedder.detail})")
    ledger.sync.embed_all(lambda done, total: report("embedding memories", done, total))


def _scan_and_embed_code(code: CodeService, report: Report) -> None:
    code.indexer.scan(lambda progress: report("parsing files", progress.done, progress.total or None))
    code.search.embed_all(lambda done, total: report("embedding symbols", done, total))


def _verify(indexes: SearchIndexes, kind: IndexKind, caught_up: Callable[[int], bool], expected: Callable[[], int]) -> Verified:
    """The index must have caught up with the journal (`caught_up(watermark)`) and hold one point per memory or
    symbol it should (`expected()`)."""
    index = indexes.opened[kind]
    with index.sync_lock():
        watermark = index.watermark()
        current, wanted, points = caught_up(watermark), expected(), index.count()
    if not current:
        raise StorageError(
            f"the journal changed while the {kind} index was built (the index reflects revision {watermark}): another "
            "process is writing to this ledger; stop it and migrate again"
        )
    name = indexes.name(kind)
    if points != wanted:
        raise IndexUnavailable(
            f"the {kind} index {name} holds {points} points but the journal has {wanted} to index; nothing was dropped. "
            "Migrate again; if it persists, run `project-ledger doctor`"
        )
    return Verified(kind, index.location, name, points, wanted)


def _drop_collections(settings: Settings, cwd: Path) -> dict[str, bool]:
    """Delete the ledger's collections on its Qdrant server, once the embedded index has been verified."""
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
