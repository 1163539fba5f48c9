"""`history`, `pin`, `unpin` and `forget` from the shell act on the same ledger the agent's server uses."""

from __future__ import annotations

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
