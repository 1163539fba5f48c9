"""A damaged journal: `doctor`'s advice, followed to the letter through the CLI, brings back every memory SQLite can
still read into a fresh data directory, and every message says what may have been lost.

The damage is real: 8 KB of random bytes over the pages that hold memories in the middle of the file, or the file
cut to half its length, on a journal filled through the MCP tools (links, sources, pins, supersession, a tombstone).
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from project_ledger.cli.salvage import seq_ranges

from .conftest import EXECUTABLE, Project, cli, connect, run_cli

pytestmark = pytest.mark.anyio
WORDS = "invoice export retry queue billing deploy staging database cluster cache token session port worker shard".split()


async def fill_journal(project: Project) -> None:
    (project.root / "billing.py").write_text("def export_invoices() -> None:\n    pass\n")
    rng = random.Random(29)
    async with connect(project) as ledger:
        ids = []
        for n in range(160):
            text = f"Fact {n}: " + " ".join(rng.choice(WORDS) for _ in range(90)) + f" ends with marker-{n}."
            ids.append(await ledger.remember(text, tags=[f"team-{n % 5}"], files=["billing.py"] if n % 9 == 0 else []))
        await ledger.call("pin", id=ids[40])
        await ledger.remember(f"Fact 70 revised: the cluster moved to shard-9, marker-{70}b.", supersedes=ids[70])
        for n in range(6):  # turns whose decisions are captured as memories derived from them
            await ledger.remember(
                f"We decided to run export worker {n} on the staging cluster every hour.", kind="turn", session="s1", role="user"
            )
        await ledger.call("forget", id=ids[120])
        await ledger.settled()


def export_lines(project: Project, *args: str) -> dict[str, dict[str, Any]]:
    destination = project.root.parent / f"export-{len(list(project.root.parent.glob('export-*')))}.jsonl"
    cli(project, "export", *args, str(destination))
    _, *lines = destination.read_text().splitlines()
    return {memory["id"]: memory for memory in map(json.loads, lines)}


def checkpoint(journal: Path) -> None:
    with sqlite3.connect(journal) as db:  # every page in the main file, so the damage is not masked by the WAL
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def garble_memories_pages(journal: Path) -> None:
    """8 KB of random bytes from the first byte of the middle one of the pages holding the memories table's rows."""
    with sqlite3.connect(journal) as db:
        pages = [
            row[0]
            for row in db.execute("SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf' ORDER BY pageno")
        ]
        size = db.execute("PRAGMA page_size").fetchone()[0]
    with journal.open("r+b") as file:
        file.seek((pages[len(pages) // 2] - 1) * size)
        file.write(random.Random(8).randbytes(8192))


def cut_to_half(journal: Path) -> None:
    os.truncate(journal, journal.stat().st_size // 2)


def advised_commands(detail: str) -> list[list[str]]:
    """The commands in backquotes in `doctor`'s advice, as argument lists."""
    return [shlex.split(command) for command in detail.split("`")[1::2]]


def run_advised(project: Project, command: list[str]) -> subprocess.CompletedProcess[str]:
    program = [EXECUTABLE] if command[0] == "project-ledger" else [command[0]]
    return subprocess.run(
        [*program, *command[1:]], capture_output=True, text=True, env={**os.environ, **project.env}, cwd=project.root, timeout=300
    )


@pytest.mark.parametrize("damage", [garble_memories_pages, cut_to_half], ids=["8 KB of memories garbled", "cut to half"])
async def test_doctors_advice_brings_back_every_readable_memory_into_a_fresh_data_directory(
    project: Project, damage: Any
) -> None:
    await fill_journal(project)
    before = export_lines(project)
    journal = project.data_dir / "journal.sqlite3"
    checkpoint(journal)
    damage(journal)

    export = run_cli(project, "export", str(project.root.parent / "after-damage.jsonl"))
    assert export.returncode == 1 and "damaged" in export.stderr and "doctor" in export.stderr, export.stderr
    assert not list(project.root.parent.glob("after-damage.jsonl*"))  # neither a file nor its .partial
    completed = run_cli(project, "doctor", "--json")
    assert completed.returncode == 1, completed.stderr
    finding = {f["check"]: f for f in json.loads(completed.stdout)}["journal"]
    assert finding["state"] == "problem" and "may be lost" in finding["detail"], finding
    for output in (export.stderr, finding["detail"]):
        assert "Nothing acknowledged earlier was lost" not in output

    said = ""
    for command in advised_commands(finding["detail"]):
        done = run_advised(project, command)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
        said += done.stderr
    salvaged_line, *_ = said.splitlines()
    salvaged = int(salvaged_line.split()[1]) + int(salvaged_line.split()[4])  # "salvaged N memories and T tombstones"
    assert (project.root.parent / "repo" / ".ledger-damaged" / "journal.sqlite3").exists()

    after = export_lines(project)
    assert len(after) == salvaged and 0 < salvaged < len(before)
    counted = re.search(r"up to (\d+) memor\w+ could not be read and are lost", said)
    unreadable = int(counted[1]) if counted else 0
    if damage is cut_to_half:  # the memories stored last may have left no trace in the half that is left
        assert unreadable <= len(before) - salvaged and "shorter than its header says" in said, said
    else:
        assert unreadable == len(before) - salvaged, said
    unlinked = set()
    if "count as current again" in said:
        unlinked = {memory_id.strip() for memory_id in said.split("check them: ")[1].split("\n")[0].split(",")}
    for memory_id, memory in after.items():
        original = before[memory_id]
        if memory_id in unlinked:
            assert original["superseded_by"] not in after and memory["superseded_by"] is None
            original = {**original, "superseded_by": None}
        if not memory["links"] and original["links"]:
            assert "code links of" in said or "no code link" in said, said
            original = {**original, "links": []}
        if not memory["sources"] and original["sources"]:
            assert "derived-from relation" in said, said
            original = {**original, "sources": []}
        assert memory == {**original, "sources": [s for s in original["sources"] if s["id"] in after]}
    kept = next(memory for memory in after.values() if memory["deleted_at"] is None and memory["superseded_by"] is None)
    found = cli(project, "recall", kept["text"], "-k", "1", "--json")["results"]
    assert found[0]["id"] == kept["id"]
    healthy = {f["check"]: f["state"] for f in json.loads(run_cli(project, "doctor", "--json").stdout)}
    assert healthy["journal"] == "ok" and healthy["index"] in ("ok", "fixed"), healthy


async def test_a_journal_damaged_outside_the_memories_salvages_whole_and_says_so(project: Project) -> None:
    """Damage in the code index's or the vectors' pages stops an integrity check, not the memories: salvage reads
    them all and says the damage is in what is rebuilt anyway."""
    await fill_journal(project)
    before = export_lines(project)
    journal = project.data_dir / "journal.sqlite3"
    checkpoint(journal)
    with sqlite3.connect(journal) as db:
        page = db.execute("SELECT pageno FROM dbstat WHERE name = 'embeddings' AND pagetype = 'leaf' ORDER BY pageno").fetchone()[
            0
        ]
    with journal.open("r+b") as file:
        file.seek((page - 1) * 4096)
        file.write(random.Random(3).randbytes(8192))
    rescued = project.root.parent / "rescued.jsonl"
    done = run_cli(project, "salvage", str(rescued))
    assert done.returncode == 0, done.stderr
    assert "the damage is in what is rebuilt anyway" in done.stderr and "lost" not in done.stderr.split("\n")[1], done.stderr
    _, *lines = rescued.read_text().splitlines()
    assert {json.loads(line)["id"]: json.loads(line) for line in lines} == before
    assert oct(rescued.stat().st_mode & 0o777) == "0o600"


def test_export_files_are_readable_by_their_owner_alone_from_the_first_byte(project: Project, tmp_path: Path) -> None:
    cli(project, "remember", "The payroll job runs at 02:00 UTC.")
    destination = tmp_path / "backup.jsonl"
    destination.write_text("an older backup, left readable by others\n")
    destination.chmod(0o644)
    (tmp_path / "backup.jsonl.partial").write_text("a crash's leftover\n")
    (tmp_path / "backup.jsonl.partial").chmod(0o666)
    old = os.umask(0)  # whatever the umask, the file is made private
    try:
        cli(project, "export", str(destination))
    finally:
        os.umask(old)
    assert oct(destination.stat().st_mode & 0o777) == "0o600"
    assert "payroll" in destination.read_text() and not (tmp_path / "backup.jsonl.partial").exists()


def test_a_partial_export_is_private_while_it_is_written(project: Project, tmp_path: Path) -> None:
    """A reader polling the .partial while `export` writes a large ledger sees mode 600 from the first moment."""
    source = tmp_path / "generated.jsonl"
    lines = [
        json.dumps(
            {
                "format": "project-ledger-export",
                "version": 1,
                "exported_at": "2026-12-01T00:00:00Z",
                "journal_id": "x",
                "memories": 3000,
                "tombstones": 0,
            }
        )
    ]
    lines += [
        json.dumps({"id": f"m{n:010d}", "text": f"Runbook step {n}: " + "restart the worker, then check the queue depth. " * 20,
                    "kind": "note", "created_at": "2026-12-01T00:00:00Z", "updated_at": "2026-12-01T00:00:00Z", "links": [], "sources": []})
        for n in range(3000)
    ]  # fmt: skip
    source.write_text("\n".join(lines) + "\n")
    cli(project, "import", str(source))
    destination, partial = tmp_path / "big.jsonl", tmp_path / "big.jsonl.partial"
    writer = subprocess.Popen(
        [EXECUTABLE, "export", "--root", str(project.root), str(destination)], env={**os.environ, **project.env}
    )
    modes = set()
    while writer.poll() is None:
        try:
            modes.add(partial.stat().st_mode & 0o777)
        except FileNotFoundError:
            continue
    assert writer.returncode == 0 and modes == {0o600}


def test_seq_ranges_are_listed_compactly() -> None:
    assert seq_ranges([3, 4, 5, 9, 11, 12]) == "3-5, 9, 11-12"
    assert seq_ranges(list(range(1, 40, 2))) == "1, 3, 5, 7, 9, 11, 13, 15, 17, 19 and 10 more ranges"
