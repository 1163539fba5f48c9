"""`project-ledger salvage`: every memory a damaged journal still holds, written as an export.

Not part of `export`, on purpose: an export is a backup, and must be whole or fail, so that a backup job never keeps
half a ledger believing it is all of it. Salvage is the lossy read made on purpose, after `doctor` found damage:
it opens the journal file read-only, without the ledger (no migration, index or model), writes what it could read,
and says what it could not.
"""

from __future__ import annotations

from pathlib import Path

import click

from project_ledger.cli.export_file import write_privately
from project_ledger.cli.support import ledger_errors, project_options
from project_ledger.config import Settings, resolve_paths
from project_ledger.storage.backup import write_export
from project_ledger.storage.journal import utc_now
from project_ledger.storage.salvage import Salvaged, salvage
from project_ledger.text.wording import plural

MOST_LISTED = 10  # ids and seq ranges listed in the summary; the rest are counted


@click.command(context_settings={"max_content_width": 100})
@click.argument("destination", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The damaged journal, or a copy of it (default: this project's, <data dir>/journal.sqlite3).",
)
@project_options
@ledger_errors
def salvage_command(settings: Settings, destination: Path, journal_path: Path | None) -> None:
    """Write every memory a damaged journal still holds as an export, and say what could not be read.

    Run it when `doctor` reports the journal damaged, with no server running for the project. The journal is
    opened read-only and left as it is. Then keep the damaged data directory aside and import the result into a
    fresh one; the index, vectors and code index are rebuilt from it.

    \b
    Examples:
      project-ledger salvage rescued.jsonl
      mv .ledger .ledger-damaged && project-ledger import rescued.jsonl
      project-ledger salvage --journal /backups/journal-copy.sqlite3 rescued.jsonl
    """
    data_dir = resolve_paths(settings, Path.cwd()).data_dir
    found = salvage(journal_path or data_dir / "journal.sqlite3")
    write_privately(destination, lambda out: write_export(found.header(utc_now()), found.memories, out))
    click.echo(summary(found, destination), err=True)


def summary(found: Salvaged, destination: Path) -> str:
    """What was written and, unless everything was read, what may be lost."""
    memories = plural(len(found.memories) - found.tombstones, "memory", "memories")
    lines = [f"salvaged {memories} and {plural(found.tombstones, 'tombstone')} to {destination}"]
    if found.complete:
        lines.append("every memory, code link and source in the journal could be read: the damage is in what is rebuilt anyway")
    if found.unreadable:
        lines.append(
            f"up to {plural(len(found.unreadable), 'memory', 'memories')} could not be read and are lost (seqs "
            f"{seq_ranges(found.unreadable)}); forgotten ones among them lose their tombstones, so importing an older "
            "export could bring them back"
        )
    if found.from_pages:
        lines.append(
            f"{plural(found.from_pages, 'memory', 'memories')} of those were read from their pages, past damage SQL could not read through"
        )
    if found.schema_lost:
        lines.append(
            "the file's schema could not be read: no code link or derived-from relation could be told from other tables' rows"
        )
    if found.truncated:
        lines.append(
            "the file is shorter than its header says: memories stored in the part cut off are lost, beyond those counted"
        )
    if found.lost_links:
        lines.append(f"the code links of {plural(found.lost_links, 'memory', 'memories')} could not be read")
    if found.lost_sources:
        lines.append(f"{plural(found.lost_sources, 'derived-from relation')} lost (unreadable, or their source memory was)")
    if found.unlinked_supersessions:
        shown = ", ".join(found.unlinked_supersessions[:MOST_LISTED])
        more = len(found.unlinked_supersessions) - MOST_LISTED
        lines.append(
            f"{plural(len(found.unlinked_supersessions), 'memory', 'memories')} had been replaced by one that was lost and "
            f"count as current again; check them: {shown}" + (f" and {more} more" if more > 0 else "")
        )
    lines.append(
        f"next: keep the damaged data directory aside (mv it), then `project-ledger import {destination}` into a fresh "
        "one; access tokens stay in the damaged journal: create them again"
    )
    return "\n".join(lines)


def seq_ranges(seqs: list[int]) -> str:
    """`3-7, 12` for [3, 4, 5, 6, 7, 12]; past MOST_LISTED ranges, how many more."""
    ranges: list[tuple[int, int]] = []
    for seq in sorted(seqs):
        if ranges and seq == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], seq)
        else:
            ranges.append((seq, seq))
    shown = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges[:MOST_LISTED])
    return shown + (f" and {len(ranges) - MOST_LISTED} more ranges" if len(ranges) > MOST_LISTED else "")
