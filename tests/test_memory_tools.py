"""remember / recall / pin / forget, as an agent uses them over MCP."""

from __future__ import annotations

import sqlite3
import struct
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from .conftest import Project, connect, journal_bytes

pytestmark = pytest.mark.anyio

DECISIONS = {
    "redis": "We decided to keep user sessions in Redis with a 30 minute idle timeout.",
    "retry": "RetryPolicy.backoff_ms starts at 250 and doubles up to 8000 for webhook deliveries.",
    "money": "All money amounts are stored as integer cents, never floats.",
    "deploy": "Deploys go out through the Helm chart in deploy/chart; staging first, then production.",
}


async def test_recall_finds_a_memory_by_paraphrase_and_by_exact_identifier(project: Project) -> None:
    async with connect(project) as ledger:
        ids = {name: await ledger.remember(text, kind="decision") for name, text in DECISIONS.items()}
        await ledger.settled()

        by_meaning = await ledger.call("recall", query="where do logged-in users' sessions live, and when do they expire?", k=1)
        assert by_meaning["mode"] == "hybrid"
        assert [hit["id"] for hit in by_meaning["results"]] == [ids["redis"]]

        by_name = await ledger.recall("RetryPolicy.backoff_ms", k=1)
        assert by_name[0]["id"] == ids["retry"]
        assert by_name[0]["text"] == DECISIONS["retry"]


async def test_remember_reports_a_duplicate_and_keeps_every_turn_of_a_conversation(project: Project) -> None:
    async with connect(project) as ledger:
        await ledger.settled()
        first = await ledger.call("remember", text="Use ruff for linting.", session="s1")
        again = await ledger.call("remember", text="Use ruff for linting.", session="s1")
        elsewhere = await ledger.call("remember", text="Use ruff for linting.", session="s2")
        turn = await ledger.call("remember", text="ok", kind="turn", session="s1")
        same_turn = await ledger.call("remember", text="ok", kind="turn", session="s1")
        turn_elsewhere = await ledger.call("remember", text="ok", kind="turn", session="s2")
    assert first["created"] is True and first["duplicate_of"] is None
    assert (again["id"], again["created"], again["duplicate_of"]) == (first["id"], False, first["id"])
    assert elsewhere["duplicate_of"] == first["id"] and elsewhere["similarity"] == 1.0  # a note is a note in any session
    assert (same_turn["created"], same_turn["duplicate_of"]) == (False, turn["id"])  # a repeated request, not a new turn
    assert turn_elsewhere["created"] is True and turn_elsewhere["id"] != turn["id"]


async def test_restating_a_memory_can_pin_it_and_a_retired_text_can_come_back(project: Project) -> None:
    async with connect(project) as ledger:
        first = await ledger.remember("Use pnpm, not npm.", session="s1")
        again = await ledger.call("remember", text="Use pnpm, not npm.", session="s1", pinned=True)
        assert again["id"] == first and again["created"] is False
        assert "Use pnpm, not npm." in await ledger.resource("ledger://pinned")

        newer = await ledger.remember("Use npm workspaces again.", session="s1", supersedes=first)
        back = await ledger.call("remember", text="Use pnpm, not npm.", session="s1", supersedes=newer)
        assert back["created"] is True and back["id"] not in (first, newer)
        assert [h["id"] for h in await ledger.recall("pnpm or npm?")] == [back["id"]]


async def test_recall_filters_by_kind_tag_session_and_date(project: Project) -> None:
    async with connect(project) as ledger:
        decision = await ledger.remember("Cache invoices for 60 seconds.", kind="decision", tags=["cache"], session="a")
        todo = await ledger.remember("Cache warmup script for invoices is missing.", kind="todo", tags=["ops"], session="b")
        assert [h["id"] for h in await ledger.recall("invoice cache", kinds=["todo"])] == [todo]
        assert [h["id"] for h in await ledger.recall("invoice cache", tags=["cache"])] == [decision]
        assert [h["id"] for h in await ledger.recall("invoice cache", session="b")] == [todo]
        assert len(await ledger.recall("invoice cache", since="1d")) == 2
        assert await ledger.recall("invoice cache", since="2999-01-01") == []


async def test_a_token_budget_drops_the_weakest_results_first_then_shortens_and_counts_what_the_model_is_handed(
    project: Project,
) -> None:
    async with connect(project) as ledger:
        for n in range(6):
            await ledger.remember(f"Release checklist item {n}: " + "verify the changelog and tag the commit. " * 8)
        full = [hit["id"] for hit in (await ledger.call("recall", query="release checklist", k=6))["results"]]
        for budget in (150, 200, 300, 600):
            budgeted, handed = await ledger.handed("recall", query="release checklist", k=6, token_budget=budget)
            assert handed == budgeted["tokens"] <= budget
            kept = budgeted["results"]
            assert [hit["id"] for hit in kept] == full[: len(kept)]  # a prefix: never a worse one instead of a better
            assert all(hit["text"].endswith("commit. ") for hit in kept if not hit.get("shortened"))
            assert all(not hit.get("shortened") for hit in kept[:-1])  # only the last one may be cut
            assert f"to fit token_budget={budget}; for them whole: recall(ids=[" in budgeted["note"]
        assert len(full) == 6 and 0 < len(kept) < 6
        tight, _ = await ledger.handed("recall", query="release checklist", k=6, token_budget=150)
        assert tight["results"][0]["id"] == full[0] and tight["results"][0]["shortened"] is True  # the best, shortened


async def test_pin_and_unpin_show_in_instructions_and_the_pinned_resource(project: Project) -> None:
    async with connect(project) as ledger:
        memory = await ledger.remember("Never push directly to main; open a pull request.", kind="decision")
        assert "Never push directly" not in await ledger.resource("ledger://pinned")
        assert await ledger.call("pin", id=memory) == {"id": memory, "ok": True}
        assert "Never push directly" in await ledger.resource("ledger://pinned")

    async with connect(project) as ledger:  # instructions are sent at initialize: a new session sees the pin
        assert ledger.instructions is not None and memory in ledger.instructions
        assert "Never push directly to main" in ledger.instructions
        await ledger.call("unpin", id=memory)
        assert "Never push directly" not in await ledger.resource("ledger://pinned")

    async with connect(project) as ledger:
        assert "Never push directly" not in (ledger.instructions or "")


async def test_forget_erases_the_text_from_recall_and_from_the_journal_files(project: Project) -> None:
    secret = "The staging database password is hunter2-zebra-7781."
    async with connect(project) as ledger:
        keep = await ledger.remember("Staging database lives on db-staging.internal.")
        gone = await ledger.remember(secret)
        await ledger.settled()
        assert gone in {h["id"] for h in await ledger.recall("staging database password")}

        assert await ledger.call("forget", id=gone) == {"id": gone, "ok": True, "also_forgotten": []}
        assert b"hunter2-zebra-7781" not in journal_bytes(project)  # while the server still has the journal open
        hits = await ledger.recall("staging database password hunter2")
        assert gone not in {h["id"] for h in hits}
        assert keep in {h["id"] for h in hits}
        assert "was forgotten" in await ledger.error("pin", id=gone)
        status = await ledger.call("status")
        assert status["forgotten"] == 1
        assert status["index"]["points"] == 1  # the point is gone from the index, not only filtered out


def stored_vector(project: Project, memory_id: str) -> bytes:
    with closing(sqlite3.connect(project.data_dir / "journal.sqlite3")) as db:
        row = db.execute("SELECT e.vector FROM embeddings e JOIN memories m ON m.seq = e.seq WHERE m.id = ?", (memory_id,)).fetchone()
    return row[0]


def files_containing(folder: Path, needle: bytes) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and needle in path.read_bytes()]


async def test_forget_also_erases_the_vector_from_the_index_files(project: Project) -> None:
    async with connect(project) as ledger:
        await ledger.remember("Deploy keys rotate every 90 days.")
        gone = await ledger.remember("The legacy admin panel answers on port 9443 with a shared login.")
        await ledger.settled()
        # 16 values of its dense vector, as the index stores them (float16)
        fingerprint = struct.pack("<16e", *struct.unpack("<16f", stored_vector(project, gone)[256:320]))
        assert files_containing(project.data_dir / "index", fingerprint), "precondition: the index holds the vector"

        await ledger.call("forget", id=gone)
        with anyio.fail_after(120):  # the server compacts its index once the forgets settle
            while not any("erased from disk" in e for e in (await ledger.call("status"))["index"]["events"]):
                await anyio.sleep(0.5)
        assert files_containing(project.data_dir, fingerprint) == []
        assert (await ledger.recall("deploy keys rotation"))[0]["text"] == "Deploy keys rotate every 90 days."


async def test_superseded_memories_are_hidden_unless_asked_for(project: Project) -> None:
    async with connect(project) as ledger:
        old = await ledger.remember("Dashboard cache TTL is 5 minutes.", kind="decision")
        new = await ledger.remember("Dashboard cache TTL is now 60 seconds.", kind="decision", supersedes=old)
        assert [h["id"] for h in await ledger.recall("dashboard cache TTL")] == [new]
        both = await ledger.recall("dashboard cache TTL", include_superseded=True)
        assert {h["id"] for h in both} == {old, new}
        assert next(h for h in both if h["id"] == old)["superseded_by"] == new
        assert "no memory with id" in await ledger.error("remember", text="x", supersedes="m0000000000")
        assert f"supersede '{new}' instead" in await ledger.error("remember", text="TTL is 10 s.", supersedes=old)


async def test_status_reports_paths_counts_and_model(project: Project) -> None:
    async with connect(project) as ledger:
        await ledger.remember("A note.")
        await ledger.remember("A decision.", kind="decision", pinned=True)
        status = await ledger.settled()
    assert status["root"] == str(project.root)
    assert status["data_dir"] == str(project.data_dir)
    assert status["counts"] == {"note": 1, "decision": 1}
    assert status["pinned"] == 1
    assert status["index"]["backend"] == "qdrant-edge"
    assert status["embedding"]["model"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert (project.data_dir / ".gitignore").read_text().strip().endswith("*")
