"""`project-ledger migrate`: move the search index between the embedded shard and a Qdrant server (see `migration`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from project_ledger.cli.access_commands import audit_local
from project_ledger.cli.progress import progress_bars
from project_ledger.cli.support import ledger_errors, project_options
from project_ledger.cli.terminal import say, say_json
from project_ledger.config import Settings

if TYPE_CHECKING:
    from project_ledger.maintenance.migration import Migration, Target

EXAMPLES = """
\b
Examples:
  QDRANT_URL=https://qdrant.internal:6333 QDRANT_API_KEY=... project-ledger migrate --to-server
  QDRANT_URL=https://qdrant.internal:6333 project-ledger migrate --to-server --into /srv/ledger/app
  QDRANT_URL=https://qdrant.internal:6333 project-ledger migrate --to-embedded --drop-server-collections
  project-ledger migrate --to-embedded --into ~/ledgers/app --json
"""


@click.command(epilog=EXAMPLES)
@click.option("--to-server", is_flag=True, help="Build this ledger's collections on the Qdrant server (QDRANT_URL or LEDGER_QDRANT_PATH).")
@click.option("--to-embedded", is_flag=True, help="Build the embedded index (Qdrant Edge shard in the data directory).")
@click.option(
    "--into",
    type=click.Path(file_okay=False, path_type=Path),
    help="First move the ledger into this new data directory (export, import, counts checked), e.g. the team host's.",
)
@click.option(
    "--drop-server-collections",
    is_flag=True,
    help="With --to-embedded: delete this ledger's collections on the server once the embedded index is verified.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verified counts as JSON.")
@project_options
@ledger_errors
def migrate(settings: Settings, to_server: bool, to_embedded: bool, into: Path | None, drop_server_collections: bool, as_json: bool) -> None:
    """Rebuild the search index on another backend from the journal, and verify its counts.

    The journal in the data directory is the source of truth; the embedded shard and the server
    collections are derived from it. Every memory and source symbol is embedded (where it has no
    vector yet) and indexed again, then each index must hold exactly what the journal says, or the
    command exits with 1. Stop servers using this ledger first.
    """
    if to_server == to_embedded:
        raise click.ClickException("choose one direction: --to-server or --to-embedded (see `project-ledger migrate --help`)")
    from project_ledger.factory import migration_openers  # the factory and the indexes: not on every command's path
    from project_ledger.maintenance.migration import migrate as run_migration

    target: Target = "server" if to_server else "embedded"
    with progress_bars() as report:
        result = run_migration(
            settings,
            Path.cwd(),
            target=target,
            openers=migration_openers(Path.cwd()),
            into=into,
            drop_server_collections=drop_server_collections,
            report=report,
        )
    audit_local(settings, f"migrate.{target}", [])
    env = next_environment(settings, result, into)
    if as_json:
        data = dataclasses.asdict(result)
        data["indexes"] = {verified.pop("kind"): verified for verified in data["indexes"]}
        say_json(json.dumps({**data, "seconds": round(result.seconds, 3), "next": dataclasses.asdict(env)}, indent=2))
        return
    say(render(result, env))


@dataclasses.dataclass(frozen=True)
class NextEnvironment:
    """What the server (and an MCP client that starts it) needs in its environment from now on."""

    set: dict[str, str]
    unset: list[str]


def next_environment(settings: Settings, result: Migration, into: Path | None) -> NextEnvironment:
    keep: dict[str, str] = {}
    unset: list[str] = []
    if result.target == "server":
        if settings.qdrant_url:
            keep["QDRANT_URL"] = settings.qdrant_url
        if settings.qdrant_api_key:
            keep["QDRANT_API_KEY"] = "<your API key>"
        if settings.qdrant_path:
            keep["LEDGER_QDRANT_PATH"] = str(settings.qdrant_path)
        if settings.qdrant_collection_prefix != "ledger":
            keep["LEDGER_QDRANT_COLLECTION_PREFIX"] = settings.qdrant_collection_prefix
        if settings.qdrant_collection:
            keep["LEDGER_QDRANT_COLLECTION"] = settings.qdrant_collection
    else:
        unset = [name for name, value in (("QDRANT_URL", settings.qdrant_url), ("LEDGER_QDRANT_PATH", settings.qdrant_path)) if value]
    if into is not None:
        keep["LEDGER_DATA_DIR"] = result.data_dir
    return NextEnvironment(keep, unset)


def render(result: Migration, env: NextEnvironment) -> str:
    where = "a Qdrant server" if result.target == "server" else "the embedded index"
    lines = [f"migrated to {where} in {result.seconds:.1f}s, verified:"]
    if result.moved is not None:
        lines.append(
            f"  moved:    {result.moved.memories} memories and {result.moved.tombstones} tombstones "
            f"from {result.moved.source} to {result.data_dir}"
        )
    for verified in result.indexes:
        lines.append(f"  {verified.kind + ':':<9} {verified.points} points of {verified.expected} in {verified.location}")
    for name, existed in result.dropped.items():
        lines.append(f"  dropped:  collection {name}" if existed else f"  dropped:  nothing: there is no collection {name}")
    lines.append("next: restart the server (and set your MCP client's `env`) with")
    lines += [f"  {name}={value}" for name, value in env.set.items()]
    lines += [f"  {name} unset" for name in env.unset]
    if not env.set and not env.unset:
        lines.append("  the same settings as now")
    return "\n".join(lines)
