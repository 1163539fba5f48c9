"""`project-ledger migrate`: an embedded ledger moves to a Qdrant server and back into another data directory,
through the real CLI, and real servers answer from the result.

No Qdrant server runs here: `LEDGER_QDRANT_PATH` points the server backend (the same qdrant-client calls) at
qdrant-client's local mode, which locks its folder to one client, so the folder is inspected only after
the server or command using it has closed it. The servers run in this process (`connect`); the migrations
are the CLI's, in processes of their own.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import anyio
import pytest

from .conftest import Project, cli, connect, run_cli
from .test_code_index import indexed

pytestmark = pytest.mark.anyio

SECRET = "The acquisition of Globex closes on 9 April; tell nobody."
NOTES = [
    "Retries back off 250ms doubling to 8s, at most five attempts.",
    "The billing service owns the invoices table; nothing else writes to it.",
    "Customer ids are opaque strings, never parsed.",
]
SOURCE = '''\
class RetryPolicy:
    """How failed HTTP calls are retried."""

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before the next attempt: 250ms doubling, at most 8s."""
        return min(0.25 * 2**attempt, 8.0)


def charge(customer_id: str, cents: int) -> None:
    """Charge a customer an amount in cents."""
'''


def collections(folder: Path) -> dict[str, int]:
    """Each collection in a qdrant-client local-mode folder and its point count."""
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(folder))
    try:
        return {c.name: client.count(c.name, exact=True).count for c in client.get_collections().collections}
    finally:
        client.close()


def files_containing(folder: Path, text: str) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and text.encode() in path.read_bytes()]


def one_line_error(project: Project, *args: str) -> str:
    """Run a migration that must fail; returns its single line of error output."""
    completed = run_cli(project, "migrate", *args)
    assert completed.returncode != 0 and not completed.stdout, completed
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), completed.stderr
    return lines[0]


async def test_a_ledger_moves_to_a_server_and_back_into_another_data_directory(tmp_path: Path) -> None:
    project = Project(tmp_path / "repo")
    project.root.mkdir()
    (project.root / "billing.py").write_text(SOURCE)
    async with connect(project) as ledger:
        old = await ledger.remember("Invoices are sent on the 1st.", kind="decision", tags=["billing"])
        new = await ledger.call("remember", text="Invoices are sent on the 3rd business day.", kind="decision", supersedes=old, pinned=True)
        for text in NOTES:
            await ledger.remember(text)
        secret = await ledger.remember(SECRET, tags=["private"])
        await ledger.call("forget", id=secret)
        await ledger.settled()
        await indexed(ledger)
        with anyio.fail_after(60):
            while (await ledger.call("status"))["code"]["pending_vectors"]:
                await anyio.sleep(0.2)
        # this server holds the embedded index, so a migration into it is refused, in one line
        busy = await anyio.to_thread.run_sync(one_line_error, project, "--to-embedded")
    assert "in use by another process" in busy and "project-ledger serve" in busy
    # Same content, new mtime: the migration's scan takes a code revision that changes no symbol, and the
    # code index counts as caught up all the same.
    later = (project.root / "billing.py").stat().st_mtime + 60
    os.utime(project.root / "billing.py", (later, later))
    live = 2 + len(NOTES)  # the superseded decision is still indexed (recall can ask for it)

    qdrant = tmp_path / "qdrant-local"
    server_env = {
        "LEDGER_QDRANT_PATH": str(qdrant),
        "LEDGER_QDRANT_COLLECTION_PREFIX": "team",
        # local mode accepts the cluster settings (and ignores them): the creation call itself is exercised
        "LEDGER_QDRANT_SHARD_NUMBER": "1",
        "LEDGER_QDRANT_REPLICATION_FACTOR": "2",
        "LEDGER_QDRANT_WRITE_CONSISTENCY_FACTOR": "1",
    }
    on_server = Project(project.root, env=server_env)
    to_server = cli(on_server, "migrate", "--to-server", "--json")
    journal_id = to_server["journal_id"]
    memories, code = to_server["indexes"]["memories"], to_server["indexes"]["code"]
    assert memories["name"] == f"team-repo-{journal_id}-memories" and memories["points"] == memories["expected"] == live
    assert code["name"] == f"team-repo-{journal_id}-code" and code["points"] == code["expected"] >= 3
    assert to_server["moved"] is None and to_server["data_dir"] == str(project.data_dir)
    assert to_server["next"] == {"set": {"LEDGER_QDRANT_PATH": str(qdrant), "LEDGER_QDRANT_COLLECTION_PREFIX": "team"}, "unset": []}

    async with connect(on_server) as ledger:
        status = await ledger.settled()
        assert status["index"]["backend"] == "qdrant-server" and status["index"]["location"].endswith(memories["name"])
        assert status["index"]["points"] == live and status["index"]["events"] == []  # used as built: no rebuild
        hits = await ledger.recall("when are invoices sent?")
        assert hits[0]["id"] == new["id"] and hits[0]["pinned"] is True
        assert [m["id"] for m in (await ledger.call("history", id=new["id"]))["chain"]] == [old, new["id"]]
        assert secret not in {hit["id"] for hit in await ledger.recall("Globex acquisition", min_relevance=0)}
        found = await ledger.call("search_code", query="how long to wait before retrying", k=3)
        assert found["mode"] == "hybrid" and found["results"][0]["qualname"] == "RetryPolicy.backoff"
    assert collections(qdrant) == {memories["name"]: live, code["name"]: code["points"]}
    assert not files_containing(qdrant, SECRET)

    team_host = tmp_path / "team-host-data"
    back = cli(on_server, "migrate", "--to-embedded", "--into", str(team_host), "--drop-server-collections", "--json")
    assert back["moved"] == {"source": str(project.data_dir), "memories": live, "tombstones": 1}
    assert back["journal_id"] != journal_id and back["data_dir"] == str(team_host)
    assert {kind: (index["name"], index["points"], index["expected"]) for kind, index in back["indexes"].items()} == {
        "memories": ("edge-0", live, live),
        "code": ("code-0", code["points"], code["points"]),
    }
    assert back["dropped"] == {memories["name"]: True, code["name"]: True}
    assert back["next"] == {"set": {"LEDGER_DATA_DIR": str(team_host)}, "unset": ["LEDGER_QDRANT_PATH"]}
    assert collections(qdrant) == {}

    async with connect(Project(project.root, env={"LEDGER_DATA_DIR": str(team_host)})) as ledger:
        status = await ledger.settled()
        assert status["index"]["backend"] == "qdrant-edge" and status["index"]["location"] == str(team_host / "index" / "edge-0")
        assert status["index"]["points"] == live and status["index"]["events"] == [] and status["forgotten"] == 1
        hits = await ledger.recall("when are invoices sent?")
        assert hits[0]["id"] == new["id"] and hits[0]["pinned"] is True
        assert secret not in {hit["id"] for hit in await ledger.recall("Globex acquisition", min_relevance=0)}
    assert not files_containing(team_host, SECRET)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_bad_migration_fails_in_one_line(tmp_path: Path) -> None:
    project = Project(tmp_path / "repo")
    project.root.mkdir()
    assert "choose one direction" in one_line_error(project, "--to-server", "--to-embedded")
    assert "QDRANT_URL" in one_line_error(project, "--to-server")
    assert "only be dropped when migrating to the embedded" in one_line_error(project, "--to-server", "--drop-server-collections")
    assert "own data directory" in one_line_error(project, "--to-embedded", "--into", str(project.data_dir))
    fixed_name = Project(project.root, env={"LEDGER_QDRANT_PATH": str(tmp_path / "q"), "LEDGER_QDRANT_COLLECTION": "app"})
    assert "unset it" in one_line_error(fixed_name, "--to-server", "--into", str(tmp_path / "elsewhere"))
    unreachable = Project(project.root, env={"QDRANT_URL": f"http://127.0.0.1:{free_port()}"})
    assert "cannot use the Qdrant server at http://127.0.0.1:" in one_line_error(unreachable, "--to-server")
    assert "qdrant_shard_number" in one_line_error(Project(project.root, env={"LEDGER_QDRANT_SHARD_NUMBER": "0"}), "--to-server")

    taken = tmp_path / "taken"
    cli(Project(project.root, env={"LEDGER_DATA_DIR": str(taken)}), "remember", "Invoices are sent on the 3rd business day.")
    assert "already holds a ledger (1 memories" in one_line_error(project, "--to-embedded", "--into", str(taken))
