"""`project-ledger export` and `import`: every field survives, tombstones included, in both directions between backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Project, cli, connect, journal_bytes, run_cli

pytestmark = pytest.mark.anyio

SECRET_PLAN = "The acquisition of Initech closes on 14 March; tell nobody."


def export_lines(project: Project, path: Path) -> list[str]:
    """The export's memory lines (the header names the journal and the moment, so it differs between ledgers)."""
    cli(project, "export", str(path))
    header, *lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(header)["format"] == "project-ledger-export"
    return lines


async def fill(project: Project) -> dict[str, str]:
    """A ledger that uses every field: tags, sessions, roles, pins, a supersession, code links, captured
    children, a gist citing its sources, access counts and a forgotten memory."""
    (project.root / "billing.py").write_text("def charge(customer_id: str, cents: int) -> None:\n    pass\n")
    async with connect(project) as ledger:
        old = await ledger.remember("Invoices are sent on the 1st.", kind="decision", tags=["billing"])
        new = await ledger.call("remember", text="Invoices are sent on the 3rd business day.", kind="decision", supersedes=old, pinned=True)
        linked = await ledger.call("remember", text="charge takes cents, never floats.", kind="constraint", files=["billing.py"])
        turn = await ledger.call(
            "remember", text="We decided to use Stripe for card payments. Never store card numbers.", kind="turn", session="s1", role="user"
        )
        await ledger.call("remember", text="Where do refunds go?", kind="turn", session="s1", role="assistant")
        gist = await ledger.call("summarize_session", session="s1")
        secret = await ledger.remember(SECRET_PLAN, tags=["private"])
        await ledger.call("forget", id=secret)
        await ledger.recall("when are invoices sent?")
        await ledger.settled()
    assert linked["links"] == ["file billing.py"] and len(turn["captured"]) == 2
    return {"old": old, "new": new["id"], "turn": turn["id"], "gist": gist["id"], "secret": secret}


async def test_an_export_imported_into_another_backend_and_back_is_the_same_ledger(tmp_path: Path) -> None:
    embedded = Project(tmp_path / "embedded")
    server = Project(tmp_path / "server", env={"LEDGER_QDRANT_PATH": str(tmp_path / "qdrant-local")})
    back = Project(tmp_path / "back")
    for project in (embedded, server, back):
        project.root.mkdir()
    ids = await fill(embedded)
    first = export_lines(embedded, tmp_path / "embedded.jsonl")
    records = {record["id"]: record for record in map(json.loads, first)}
    assert records[ids["secret"]]["deleted_at"] and records[ids["secret"]]["text"] == ""
    assert records[ids["old"]]["superseded_by"] == ids["new"] and records[ids["new"]]["pinned"] is True
    assert {s["relation"] for s in records[ids["gist"]]["sources"]} == {"cites", "covers"}
    assert SECRET_PLAN not in (tmp_path / "embedded.jsonl").read_text()

    imported = cli(server, "import", str(tmp_path / "embedded.jsonl"), "--json")
    assert imported == {"added": len(first), "tombstones": 1, "forgotten": 0, "kept": 0, "redacted": 0}
    assert export_lines(server, tmp_path / "server.jsonl") == first
    async with connect(server) as ledger:
        status = await ledger.settled()
        assert status["index"]["backend"] == "qdrant-server" and status["forgotten"] == 1
        hits = await ledger.recall("when are invoices sent?")
        assert hits[0]["id"] == ids["new"] and hits[0]["pinned"] is True
        assert [m["id"] for m in (await ledger.call("history", id=ids["new"]))["chain"]] == [ids["old"], ids["new"]]
        expanded = await ledger.call("recall", ids=[ids["gist"]], expand=True)
        assert ids["turn"] in {hit["id"] for hit in expanded["results"]}
        assert ids["secret"] not in {hit["id"] for hit in await ledger.recall("Initech acquisition", min_relevance=0)}
    assert SECRET_PLAN.encode() not in journal_bytes(server)

    cli(back, "import", str(tmp_path / "server.jsonl"))
    assert export_lines(back, tmp_path / "back.jsonl") == first
    async with connect(back) as ledger:
        await ledger.settled()
        assert (await ledger.recall("when are invoices sent?"))[0]["id"] == ids["new"]


async def test_importing_a_later_backup_forgets_what_it_forgot_and_a_damaged_file_imports_nothing(tmp_path: Path) -> None:
    source, target = Project(tmp_path / "source"), Project(tmp_path / "target")
    for project in (source, target):
        project.root.mkdir()
    async with connect(source) as ledger:
        keep = await ledger.remember("Deploys go out on Tuesdays.")
        secret = await ledger.remember(SECRET_PLAN)
    cli(source, "export", str(tmp_path / "before.jsonl"))
    async with connect(source) as ledger:
        await ledger.call("forget", id=secret)
    cli(source, "export", str(tmp_path / "after.jsonl"))

    assert cli(target, "import", str(tmp_path / "before.jsonl"), "--json")["added"] == 2
    assert SECRET_PLAN.encode() in journal_bytes(target)
    assert cli(target, "import", str(tmp_path / "after.jsonl"), "--json") == {"added": 0, "tombstones": 0, "forgotten": 1, "kept": 1, "redacted": 0}
    assert SECRET_PLAN.encode() not in journal_bytes(target)
    assert cli(target, "import", str(tmp_path / "before.jsonl"), "--json")["kept"] == 2  # an old backup does not bring it back
    async with connect(target) as ledger:
        await ledger.settled()
        assert [hit["id"] for hit in await ledger.recall("deploy day", min_relevance=0)] == [keep]

    lines = (tmp_path / "after.jsonl").read_text().splitlines()
    broken = {
        "truncated.jsonl": "\n".join(lines[:-1]),
        "edited.jsonl": "\n".join([lines[0], lines[1].replace('"kind":"note"', '"kind":"rumour"'), *lines[2:]]),
        "not-an-export.jsonl": '{"hello": "world"}\n',
    }
    for name, text in broken.items():
        (tmp_path / name).write_text(text)
        completed = run_cli(target, "import", str(tmp_path / name))
        assert completed.returncode == 1 and "Traceback" not in completed.stderr, completed.stderr
        assert "nothing was imported" in completed.stderr or "not a project-ledger export" in completed.stderr, completed.stderr
    assert cli(target, "status", "--json")["counts"] == {"note": 1}
