"""Nothing stored is lost: restarts, a deleted index, several processes on one project, and the CLI beside a server."""

from __future__ import annotations

import shutil

import anyio
import pytest

from .conftest import Project, cli, connect, serve

pytestmark = pytest.mark.anyio


async def test_memories_survive_a_server_restart(project: Project) -> None:
    async with connect(project) as ledger:
        memory = await ledger.remember("Feature flags are read from LaunchDarkly at boot.", kind="decision", tags=["flags"])
        await ledger.call("pin", id=memory)

    async with connect(project) as ledger:
        hits = await ledger.recall("LaunchDarkly feature flags")
        assert hits[0]["id"] == memory
        assert hits[0]["tags"] == ["flags"] and hits[0]["pinned"] is True
        assert (await ledger.call("status"))["counts"] == {"decision": 1}


async def test_a_deleted_index_folder_is_rebuilt_from_the_journal(project: Project) -> None:
    texts = [f"Service number {n} listens on port {8000 + n}." for n in range(20)]
    async with connect(project) as ledger:
        ids = [await ledger.remember(text) for text in texts]
        await ledger.settled()

    shutil.rmtree(project.data_dir / "index")

    async with connect(project) as ledger:
        status = await ledger.settled()
        assert status["index"]["indexed_rev"] == status["index"]["journal_rev"]
        hits = await ledger.call("recall", query="which port does service number 7 listen on?", k=1)
        assert hits["mode"] == "hybrid"
        assert hits["results"][0]["id"] == ids[7]


@pytest.mark.parametrize(("files", "damage"), [("*", b"\0garbage"), ("status.dat", b"")], ids=["garbage", "emptied status"])
async def test_a_damaged_shard_is_detected_and_rebuilt(project: Project, files: str, damage: bytes) -> None:
    """Garbage in every file, or an emptied storage status file, as a power cut can leave it (the engine panics on
    that one: a BaseException, not an Exception)."""
    async with connect(project) as ledger:
        memory = await ledger.remember("The nightly export runs at 02:00 UTC.")
        await ledger.settled()

    for path in (project.data_dir / "index" / "edge-0").glob(f"shard-*/**/{files}"):
        if path.is_file():
            path.write_bytes(damage)

    async with connect(project) as ledger:
        status = await ledger.settled()
        assert any("rebuilt" in event for event in status["index"]["events"]), status["index"]["events"]
        assert (await ledger.recall("nightly export time"))[0]["id"] == memory


async def test_two_servers_on_one_project_both_write_and_see_every_write(project: Project) -> None:
    async with serve(project) as first, serve(project) as second:
        written: dict[str, str] = {}

        async def write(ledger_name: str, ledger: object, count: int) -> None:
            for n in range(count):
                text = f"Writer {ledger_name} records fact number {n}: the cache shard {ledger_name}{n} is warm."
                written[text] = await ledger.remember(text)  # type: ignore[attr-defined]

        async with anyio.create_task_group() as group:
            group.start_soon(write, "alpha", first, 25)
            group.start_soon(write, "beta", second, 25)

        assert len(set(written.values())) == 50
        for ledger in (first, second):
            await ledger.settled()
            status = await ledger.call("status")
            assert status["counts"] == {"note": 50}
            for text, memory_id in list(written.items())[::7]:
                hits = await ledger.recall(text, k=3)
                assert memory_id in [hit["id"] for hit in hits], text

    async with connect(project) as ledger:  # and after both are gone, everything is still there
        assert (await ledger.call("status"))["counts"] == {"note": 50}


async def test_the_cli_works_beside_a_running_server(project: Project) -> None:
    async with connect(project) as ledger:
        server_id = await ledger.remember("Postgres major version is pinned to 16.", kind="decision")
        await ledger.settled()  # the server holds its index slot before the CLI looks for one
        cli_result = await anyio.to_thread.run_sync(
            lambda: cli(project, "remember", "Redis is only a cache, never a source of truth.", "--kind", "decision", "--json")
        )
        assert cli_result["created"] is True

        status = await ledger.settled()  # the server picks the CLI's write up from the journal and embeds it
        assert status["counts"] == {"decision": 2}
        hits = await ledger.recall("is redis a source of truth?")
        assert hits[0]["id"] == cli_result["id"]

        found = await anyio.to_thread.run_sync(lambda: cli(project, "recall", "which Postgres version?", "-k", "1", "--json"))
        assert found["results"][0]["id"] == server_id
        status = await anyio.to_thread.run_sync(lambda: cli(project, "status", "--json"))
        assert status["counts"] == {"decision": 2}
        assert status["index"]["location"].endswith("edge-1")  # the server holds slot 0


async def test_reindex_rebuilds_on_demand(project: Project) -> None:
    async with connect(project) as ledger:
        memory = await ledger.remember("Uploads larger than 25 MB are rejected with HTTP 413.")
        await ledger.settled()
        output = await anyio.to_thread.run_sync(lambda: cli(project, "reindex"))
        assert output.startswith("index rebuilt: 1 memory")
        rebuilt = "Z index rebuilt on request (project-ledger reindex)"  # after the time it happened
        with anyio.fail_after(60):  # the server notices the request at its next poll of the journal
            while not any(e.endswith(rebuilt) for e in (await ledger.call("status"))["index"]["events"]):
                await anyio.sleep(0.2)
        await ledger.settled()
        assert (await ledger.recall("upload size limit"))[0]["id"] == memory


async def test_without_a_loadable_model_recall_falls_back_to_bm25_and_says_why(project: Project) -> None:
    project.env["LEDGER_EMBED_MODEL_PATH"] = str(project.root / "no-model-here")
    async with connect(project) as ledger:
        memory = await ledger.remember("Background jobs run on Dramatiq with Redis as the broker.")
        with anyio.fail_after(60):
            while (status := await ledger.call("status"))["embedding"]["state"] != "failed":
                await anyio.sleep(0.2)
        assert status["embedding"]["detail"]
        result = await ledger.call("recall", query="Dramatiq broker")
        assert result["mode"] == "bm25-only"
        assert result["note"].startswith("BM25 only: the embedding model is failed")
        assert [hit["id"] for hit in result["results"]] == [memory]
