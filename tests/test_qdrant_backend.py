"""The Qdrant server backend (qdrant-client), run against qdrant-client's local mode, which has the same API.

No Qdrant server can run here, so `LEDGER_QDRANT_PATH` points the same code at
`QdrantClient(path=...)`; in production `QDRANT_URL` points it at a server.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from .conftest import Project, serve

pytestmark = pytest.mark.anyio

CORPUS = json.loads((Path(__file__).parent.parent / "benchmarks" / "data" / "recall_corpus.json").read_text())
MEMORIES = CORPUS["memories"][:60]
QUERIES = [q["query"] for q in CORPUS["queries"] if set(q["relevant"]) <= {m["key"] for m in MEMORIES}]


async def ranked_texts(project: Project) -> tuple[list[list[str]], dict]:
    async with serve(project) as ledger:
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
    assert server_rankings == embedded_rankings


async def test_the_server_backend_persists_forgets_and_catches_up(tmp_path: Path) -> None:
    project = Project(tmp_path / "repo", env={"LEDGER_QDRANT_PATH": str(tmp_path / "qdrant-local")})
    project.root.mkdir()
    async with serve(project) as ledger:
        keep = await ledger.remember("Invoices are numbered per tenant, starting at 1000.")
        gone = await ledger.remember("Temporary note: the invoice numbering bug is in numbering.py line 88.")
        await ledger.settled()
    async with serve(project) as ledger:  # restarted: it must catch up with the forget below
        await ledger.call("forget", id=gone)
        assert [h["id"] for h in await ledger.recall("invoice numbering")] == [keep]
        status = await ledger.settled()
        assert status["index"]["lag"] == 0 and status["index"]["points"] == 1
    async with serve(project) as ledger:
        status = await ledger.settled()
        assert status["index"]["points"] == 1
        assert [h["id"] for h in await ledger.recall("invoice numbering")] == [keep]


async def test_code_search_on_the_server_backend_matches_the_embedded_one(tmp_path: Path) -> None:
    """Symbols go to their own collection (`<collection>-code`) and rank as they do in the embedded shard."""
    from .test_code_index import FIXTURES, indexed

    languages = ("python", "c", "swift", "bash")
    queries = ["distance between two points", "ring buffer push", "playlist duration", "deploy script"]
    rankings = []
    for name, env in (("embedded", {}), ("server", {"LEDGER_QDRANT_PATH": str(tmp_path / "qdrant-local")})):
        project = Project(tmp_path / name, env=env)
        project.root.mkdir()
        for language in languages:
            shutil.copytree(FIXTURES / language, project.root / "langs" / language)
        async with serve(project) as ledger:
            await indexed(ledger)
            with anyio.fail_after(300):
                while (await ledger.call("status"))["code"]["pending_vectors"]:
                    await anyio.sleep(0.5)
            results = [await ledger.call("search_code", query=query, k=5) for query in queries]
        assert all(result["mode"] == "hybrid" and result["results"] for result in results)
        rankings.append([[(hit["path"], hit["qualname"]) for hit in result["results"]] for result in results])
    assert rankings[0] == rankings[1]
