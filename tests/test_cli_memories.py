"""`history`, `pin`, `unpin` and `forget` from the shell act on the same ledger the agent's server uses."""

from __future__ import annotations

import json

import pytest

from .conftest import Project, cli, connect, journal_bytes, run_cli

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
