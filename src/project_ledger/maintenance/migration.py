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

from project_ledger.config import Settings, resolve_paths
from project_ledger.errors import InvalidArgument, StorageError
from project_ledger.maintenance.service import MaintenanceService, Report, Services, Verified, quiet

Target = Literal["server", "embedded"]


@dataclass(frozen=True)
class Openers:
    """What a migration opens, handed over by the composition root (`factory.migration_openers`)."""

    services: Callable[[Settings], Services]
    """The services over the ledger `settings` describe."""
    rebuilding: Callable[[Settings], Services]
    """The same, each search index emptied as it opens, so that catching up fills it from the journal."""
    drop_collections: Callable[[Settings], dict[str, bool]]
    """Delete the ledger's collections on its Qdrant server: collection -> whether it existed."""


@dataclass(frozen=True)
class Moved:
    """What `into` received: the export's header counts, found again in the target journal."""

    source: str
    memories: int
    tombstones: int


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
    *,
    target: Target,
    openers: Openers,
    into: Path | None = None,
    drop_server_collections: bool = False,
    report: Report = quiet,
) -> Migration:
    """Build `target`'s indexes from the journal (after moving the ledger to `into`, if given) and verify them.

    `settings` describe the ledger as it is; the Qdrant settings name the server the indexes go to
    (`target="server"`) or whose collections `drop_server_collections` removes once the embedded
    index is verified (`target="embedded"`).
    """
    started = time.perf_counter()
    source = resolve_paths(settings, cwd)
    _check(settings, target=target, into=into, data_dir=source.data_dir, drop=drop_server_collections)
    update: dict[str, object] = {"data_dir": into.expanduser().resolve()} if into is not None else {}
    if target == "embedded":
        update |= {"qdrant_url": None, "qdrant_path": None}
    destination = settings.model_copy(update=update)
    moved = _move(openers, settings=settings, destination=destination, report=report) if into is not None else None
    indexes, journal_id = _build(openers, destination, report)
    dropped = openers.drop_collections(settings) if drop_server_collections else {}
    data_dir = resolve_paths(destination, cwd).data_dir
    return Migration(
        target=target,
        data_dir=str(data_dir),
        journal_id=journal_id,
        moved=moved,
        indexes=indexes,
        dropped=dropped,
        seconds=time.perf_counter() - started,
    )


def _check(settings: Settings, *, target: Target, into: Path | None, data_dir: Path, drop: bool) -> None:
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


def _move(openers: Openers, *, settings: Settings, destination: Settings, report: Report) -> Moved:
    """Copy every memory, tombstones included, into an empty ledger in another data directory, through the
    export format, and check the target journal holds what the export's header promised."""
    report("moving memories", 0, None)
    target = openers.services(destination)
    try:
        _require_empty(target.maintenance)
        source = openers.services(settings)
        try:
            # The export holds memory text: it stays in the target's private data directory, and is gone when closed.
            with tempfile.TemporaryFile("w+", encoding="utf-8", dir=target.maintenance.paths.data_dir) as buffer:
                header = source.ledger.browsing.export(buffer)
                buffer.seek(0)
                target.ledger.import_export(buffer)
        finally:
            source.close()
        _, live = target.maintenance.journal_figures()
        tombstones = target.maintenance.counts().forgotten
        if (live, tombstones) != (header.memories, header.tombstones):
            raise StorageError(
                f"{target.maintenance.paths.data_dir} holds {live} memories and {tombstones} tombstones after the import, "
                f"but the export held {header.memories} and {header.tombstones}; the source ledger is unchanged"
            )
        report("moving memories", live + tombstones, live + tombstones)
        return Moved(str(source.maintenance.paths.data_dir), header.memories, header.tombstones)
    finally:
        target.close()


def _require_empty(maintenance: MaintenanceService) -> None:
    _, live = maintenance.journal_figures()
    forgotten = maintenance.counts().forgotten
    if live or forgotten:
        raise InvalidArgument(
            f"{maintenance.paths.data_dir} already holds a ledger ({live} memories, {forgotten} forgotten); move into a new or "
            "empty data directory, merge with `project-ledger import`, or rebuild that ledger's index by migrating it "
            "without a target directory"
        )


def _build(openers: Openers, settings: Settings, report: Report) -> tuple[list[Verified], str]:
    """Embed what has no vector, rebuild both indexes of the ledger `settings` describe, and verify them."""
    services = openers.rebuilding(settings)
    maintenance = services.maintenance
    try:
        maintenance.check_backend()
        maintenance.require_model()
        maintenance.embed_memories(report)
        if maintenance.has_code:
            maintenance.scan_code(report)
            maintenance.embed_symbols(report)
        _, expected = maintenance.journal_figures()
        report("indexing memories", 0, expected)
        verified = [maintenance.build_memory_index()]
        report("indexing memories", verified[0].points, expected)
        if maintenance.has_code:
            symbols = maintenance.code_counts().symbols
            report("indexing symbols", 0, symbols)
            verified.append(maintenance.build_code_index())
            report("indexing symbols", verified[-1].points, symbols)
        return verified, maintenance.journal_id()
    finally:
        services.close()
