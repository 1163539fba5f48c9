"""The Qdrant server backend (qdrant-client), run against qdrant-client's local mode, which has the same API.

No Qdrant server can run here, so `LEDGER_QDRANT_PATH` points the same code at
`QdrantClient(path=...)`; in production `QDRANT_URL` points it at a server.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import anyio
import pytest

from .conftest import Project, cli, connect

pytestmark = pytest.mark.anyio

CORPUS = json.loads((Path(__file__).parent.parent / "benchmarks" / "data" / "recall_corpus.json").read_text())
MEMORIES = CORPUS["memories"][:60]
QUERIES = [q["query"] for q in CORPUS["queries"] if set(q["relevant"]) <= {m["key"] for m in MEMORIES}]


async def ranked_texts(project: Project) -> tuple[list[list[str]], dict]:
    async with connect(project) as ledger:
        for memory in MEMORIES:
            await ledger.remember(memory["text"], kind=memory["kind"], tags=memory["tags"], session=memory["session"])
        status = await ledger.settled()
        rankings = []
        for query in QUERIES:
            result = await ledger.call("recall", query=query, k=5)
            assert result["mode"] == "hybrid"
            rankings.append([hit["text"] for hit in result["results"]])
    return rankings, status


async def test_the_server_backend_gives_the_same_results_as_the_embedded_one(tmp_path: Path) -> None:
    assert len(QUERIES) >= 10
    embedded = Project(tmp_path / "embedded")
    server = Project(tmp_path / "server", env={"LEDGER_QDRANT_PATH": str(tmp_path / "qdrant-local")})
    for project in (embedded, server):
        project.root.mkdir()

    embedded_rankings, embedded_status = await ranked_texts(embedded)
    server_rankings, server_status = await ranked_texts(server)

    assert embedded_status["index"]["backend"] == "qdrant-edge"
    assert server_status["index"]["backend"] == "qdrant-server"
    assert "collection ledger-server-" in server_status["index"]["location"]
    assert server_status["index"]["location"].endswith("-memories")
    assert server_rankings == embedded_rankings


async def test_the_server_backend_persists_forgets_and_catches_up(tmp_path: Path) -> None:
    project = Project(tmp_path / "repo", env={"LEDGER_QDRANT_PATH": str(tmp_path / "qdrant-local")})
    project.root.mkdir()
    async with connect(project) as ledger:
        keep = await ledger.remember("Invoices are numbered per tenant, starting at 1000.")
        gone = await ledger.remember("Temporary note: the invoice numbering bug is in numbering.py line 88.")
        await ledger.settled()
    async with connect(project) as ledger:  # restarted: it must catch up with the forget below
        await ledger.call("forget", id=gone)
        assert [h["id"] for h in await ledger.recall("invoice numbering")] == [keep]
        status = await ledger.settled()
        assert status["index"]["lag"] == 0 and status["index"]["points"] == 1
    async with connect(project) as ledger:
        status = await ledger.settled()
        assert status["index"]["points"] == 1
        assert [h["id"] for h in await ledger.recall("invoice numbering")] == [keep]


@pytest.mark.parametrize(("written_format", "rebuilt"), [(2, False), (3, False), (1, True)])
async def test_a_collection_of_an_earlier_format_is_rebuilt_only_when_that_format_changed_it(
    tmp_path: Path, written_format: int, rebuilt: bool
) -> None:
    """Formats 3 and 4 changed only the embedded shard, so a server collection written under format 2 or 3 is kept."""
    project = Project(tmp_path / "repo", env={"LEDGER_QDRANT_PATH": str(tmp_path / "qdrant-local")})
    project.root.mkdir()
    async with connect(project) as ledger:
        kept = await ledger.remember("Invoices are numbered per tenant, starting at 1000.")
        await ledger.settled()
    states = list(project.data_dir.rglob("qdrant-*.json"))
    assert states
    for state in states:
        data = json.loads(state.read_text())
        state.write_text(json.dumps({**data, "format": written_format}))
    async with connect(project) as ledger:
        status = await ledger.settled()
        assert ("did not match this journal or model: rebuilt" in json.dumps(status)) is rebuilt
        assert [h["id"] for h in await ledger.recall("invoice numbering")] == [kept]


async def test_code_search_on_the_server_backend_matches_the_embedded_one(tmp_path: Path) -> None:
    """Symbols go to their own collection (`<prefix>-<project>-<id>-code`) and rank as they do in the embedded shard."""
    from .test_code_index import FIXTURES, indexed

    languages = ("python", "c", "swift", "bash")
    queries = ["distance between two points", "ring buffer push", "playlist duration", "deploy script"]
    rankings = []
    for name, env in (("embedded", {}), ("server", {"LEDGER_QDRANT_PATH": str(tmp_path / "qdrant-local")})):
        project = Project(tmp_path / name, env=env)
        project.root.mkdir()
        for language in languages:
            shutil.copytree(FIXTURES / language, project.root / "langs" / language)
        async with connect(project) as ledger:
            await indexed(ledger)
            with anyio.fail_after(300):
                while (await ledger.call("status"))["code"]["pending_vectors"]:
                    await anyio.sleep(0.5)
            results = [await ledger.call("search_code", query=query, k=5) for query in queries]
        assert all(result["mode"] == "hybrid" and result["results"] for result in results)
        rankings.append([[(hit["path"], hit["qualname"]) for hit in result["results"]] for result in results])
    assert rankings[0] == rankings[1]


async def test_a_collection_named_the_old_way_is_left_alone_and_the_new_one_built_from_the_journal(tmp_path: Path) -> None:
    """Before the prefix setting, memories went to `ledger-<project>-<id>`, without the `-memories` suffix (the code
    collection's name has not changed). A server started after the upgrade finds no collection under the new name
    and builds it from the journal; the old one is left as it was, for the operator to delete."""
    from qdrant_client import QdrantClient, models

    from .test_migrate import collections

    qdrant = tmp_path / "qdrant-local"
    project = Project(tmp_path / "repo")
    project.root.mkdir()
    for memory in MEMORIES[:3]:
        cli(project, "remember", memory["text"])
    with sqlite3.connect(project.data_dir / "journal.sqlite3") as db:
        journal_id = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0]
    old = f"ledger-repo-{journal_id}"
    client = QdrantClient(path=str(qdrant))
    client.create_collection(old, vectors_config={"dense": models.VectorParams(size=384, distance=models.Distance.COSINE)})
    client.upsert(old, points=[models.PointStruct(id=1, vector={"dense": [0.1] * 384})])
    client.close()

    project.env["LEDGER_QDRANT_PATH"] = str(qdrant)
    async with connect(project) as ledger:
        status = await ledger.settled()
        assert status["index"]["location"].endswith(f"collection {old}-memories") and status["index"]["points"] == 3
        assert (await ledger.recall(MEMORIES[0]["text"]))[0]["text"] == MEMORIES[0]["text"]
    assert collections(qdrant) == {old: 1, f"{old}-memories": 3, f"{old}-code": 0}


@pytest.mark.parametrize(
    ("client_version", "server_version", "works"),
    [("1.15.1", "1.15.0", True), ("1.15.1", "v1.14.2", True), ("1.15.1", "1.13.0", False), ("2.0.0", "1.15.0", False), ("1.15.1", "dev", True)],
)
def test_the_server_version_is_compared_as_qdrant_client_does(client_version: str, server_version: str, works: bool) -> None:
    from project_ledger.search.qdrant_index import compatible_versions

    assert compatible_versions(client_version, server_version) is works
