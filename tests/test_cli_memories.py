"""`history`, `pin`, `unpin` and `forget` from the shell act on the same ledger the agent's server uses."""

from __future__ import annotations

import json

import pytest

from .conftest import Project, cli, connect, journal_bytes, run_cli, serve

pytestmark = pytest.mark.anyio


async def test_pin_history_and_forget_from_the_shell_show_up_for_the_agent(project: Project) -> None:
    first = cli(project, "remember", "Invoices are exported as CSV", "--kind", "decision").strip()
    second = cli(project, "remember", "Invoices are exported as Parquet, not CSV", "--kind", "decision", "--supersedes", first).strip()

    assert cli(project, "pin", second) == f"pinned {second}\n"
    chain = cli(project, "history", second, "--json")
    assert [m["id"] for m in chain["chain"]] == [first, second] and chain["current"] == second

    async with connect(project) as ledger:
        assert "exported as Parquet" in ledger.instructions, "a pin made in the shell reaches the next session"

    assert cli(project, "unpin", second) == f"unpinned {second}\n"
    secret = cli(project, "remember", "The staging database lives on db-7.internal").strip()
    refused = run_cli(project, "forget", secret)  # no terminal to confirm on: nothing happens
    assert refused.returncode == 1 and "Aborted" in refused.stderr
    assert b"db-7.internal" in journal_bytes(project)

    assert cli(project, "forget", secret, "--yes") == f"forgot {secret}\n"
    assert b"db-7.internal" not in journal_bytes(project)
    async with connect(project) as ledger:
        assert "Parquet" not in ledger.instructions
        assert "was forgotten" in await ledger.error("pin", id=secret)


def test_an_unknown_id_is_one_readable_line(project: Project) -> None:
    completed = run_cli(project, "pin", "m-no-such-id")
    assert completed.returncode == 1
    assert completed.stderr.strip().splitlines() == ["Error: no memory with id 'm-no-such-id'; use recall to find the id you mean"]


def test_status_reads_the_index_slot_without_opening_it_and_says_what_is_not_indexed_yet(project: Project) -> None:
    cli(project, "remember", "Invoices are exported as CSV", "--kind", "decision")
    cli(project, "recall", "invoice export format", "-k", "1")  # opens slot 0, indexes the memory, records it
    cli(project, "remember", "Refunds older than 90 days need a manager's approval", "--kind", "decision")
    slot = project.data_dir / "index" / "edge-0"
    written = {path: path.stat().st_mtime_ns for path in slot.rglob("*")}

    index = cli(project, "status", "--json")["index"]
    assert index["state"] == "not-opened" and index["location"] == str(slot)
    assert index["points"] == 1 and index["lag"] == index["journal_rev"] - index["indexed_rev"] >= 1
    assert f"{index['lag']} journal change" in cli(project, "status")
    assert {path: path.stat().st_mtime_ns for path in slot.rglob("*")} == written, "status loaded or flushed the slot"

    cli(project, "recall", "refund approval", "-k", "1")
    index = cli(project, "status", "--json")["index"]
    assert (index["state"], index["points"], index["lag"]) == ("not-opened", 2, 0)
    assert "not in this index slot yet" not in cli(project, "status")


def test_status_opens_a_slot_whose_state_file_does_not_record_its_size(project: Project) -> None:
    """A slot last written by an older version: status opens it to tell, and records the size for the next one."""
    cli(project, "remember", "Invoices are exported as CSV", "--kind", "decision")
    cli(project, "recall", "invoice export format", "-k", "1")
    state_file = project.data_dir / "index" / "edge-0" / "state.json"
    state = json.loads(state_file.read_text())
    del state["points"]
    state_file.write_text(json.dumps(state))

    index = cli(project, "status", "--json")["index"]
    assert (index["state"], index["points"], index["lag"]) == ("ready", 1, 0)
    assert json.loads(state_file.read_text())["points"] == 1
    assert cli(project, "status", "--json")["index"]["state"] == "not-opened"


async def test_status_beside_a_running_server_reads_its_slot_and_takes_none_of_its_own(project: Project) -> None:
    """Each process that searches takes an index slot of its own. A status takes none: beside a server, which holds
    slot 0, it reads what that slot recorded rather than creating slot 1 and building a copy of the index in it."""
    index_dir = project.data_dir / "index"
    async with serve(project) as ledger:
        await ledger.remember("Invoices are exported as CSV", kind="decision")
        await ledger.settled()
        index = cli(project, "status", "--json")["index"]
        assert (index["state"], index["location"]) == ("not-opened", str(index_dir / "edge-0"))
        # What the slot last recorded (the server writes it after it indexes): a count and a revision that agree.
        assert (index["points"] > 0) == (index["indexed_rev"] > 0) and index["indexed_rev"] <= index["journal_rev"], index
        assert not (index_dir / "edge-1").exists() and not (index_dir / "edge-1.lock").exists()


def test_status_leaves_the_data_directory_as_it_found_it(project: Project) -> None:
    """A status reads and writes nothing. Code tables written under an earlier text version (no `code_text` counter,
    other hashes) are counted as they will be once re-hashed; the re-hash itself, which moves every symbol to a new
    revision, is left to the next command that embeds or indexes them."""
    from project_ledger.code.symbol_text import TEXT_VERSION

    from .test_code_index import journal_rows, journal_write

    (project.root / "billing.py").write_text('def export_invoices():\n    """Send the month\'s invoices."""\n')
    (project.root / "refunds.py").write_text('def approve_refund():\n    """Ask a manager first."""\n')
    cli(project, "remember", "Invoices are exported as CSV", "--kind", "decision")
    cli(project, "recall", "invoice export format", "-k", "1")  # the memory slot records its state
    cli(project, "index")  # two symbols without vectors
    assert journal_rows(project, "SELECT value FROM counters WHERE name = 'code_text'") == [(TEXT_VERSION,)]  # written now

    def data_dir() -> dict[str, tuple[int, bytes]]:
        """Each file's mtime and bytes (SQLite's -wal and -shm files come and go with every connection)."""
        return {str(path): (path.stat().st_mtime_ns, path.read_bytes()) for path in project.data_dir.rglob("*") if path.is_file()}

    before = data_dir()
    status = cli(project, "status", "--json")
    assert (status["code"]["symbols"], status["code"]["pending_vectors"], status["counts"]) == (2, 2, {"decision": 1})
    assert data_dir() == before, "status changed the data directory"

    assert cli(project, "index", "--embed", "--json")["embedded"] == 2
    assert cli(project, "status", "--json")["code"]["pending_vectors"] == 0
    journal_write(  # what an earlier version left: other texts' hashes, each with its vector, and no text version
        project,
        ("UPDATE code_symbols SET embed_hash = 'old-' || embed_hash", ()),
        ("UPDATE code_vectors SET embed_hash = 'old-' || embed_hash", ()),
        ("DELETE FROM counters WHERE name = 'code_text'", ()),
    )
    before = data_dir()
    assert cli(project, "status", "--json")["code"]["pending_vectors"] == 2  # each old hash has a vector; the new ones not
    assert "2 symbols without vectors" in cli(project, "status")
    assert data_dir() == before, "status re-hashed the symbols"
    assert cli(project, "index", "--embed", "--json")["embedded"] == 2  # as status said
    assert cli(project, "status", "--json")["code"]["pending_vectors"] == 0
