"""`project-ledger doctor`: what it finds after real damage, what `--fix` repairs, and what it leaves to the owner."""

from __future__ import annotations

import sqlite3
from typing import Any

import anyio
import pytest

from .conftest import Project, cli, connect, run_cli

pytestmark = pytest.mark.anyio


def doctor(project: Project, *args: str) -> dict[str, dict[str, Any]]:
    return {finding["check"]: finding for finding in cli(project, "doctor", "--json", *args)}


def states(findings: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {check: finding["state"] for check, finding in findings.items()}


async def test_doctor_repairs_derived_data_and_reports_a_damaged_journal_without_touching_it(project: Project) -> None:
    (project.root / "app.py").write_text("def handle(event: dict) -> None:\n    pass\n")
    (project.root / "project_context.md").write_text("# app\n\nHandles events from the queue.\n")  # missing, it is a warning
    async with connect(project) as ledger:
        ids = [await ledger.remember(f"Service number {n} listens on port {8000 + n}.") for n in range(12)]
        await ledger.settled()
        with anyio.fail_after(120):  # and the symbols' vectors: doctor reports symbols without one
            while (code := (await ledger.call("status"))["code"])["files"] != 1 or code["pending_vectors"]:
                await anyio.sleep(0.2)
    healthy = doctor(project)
    assert healthy.pop("hooks")["state"] == "skipped"  # Claude Code hooks are not installed here (see test_hooks.py)
    assert set(states(healthy).values()) == {"ok"}, healthy
    assert healthy["journal"]["detail"].startswith("integrity check passed; 12 memories")

    project.data_dir.chmod(0o755)
    for path in (project.data_dir / "index" / "edge-0").glob("shard-*/**/*"):
        if path.is_file():
            path.write_bytes(b"\0garbage")
    with sqlite3.connect(project.data_dir / "journal.sqlite3") as db:
        db.execute("DELETE FROM embeddings WHERE seq IN (SELECT seq FROM memories ORDER BY seq LIMIT 3)")
    (project.root / "jobs.py").write_text("def nightly_export() -> None:\n    pass\n")

    found = doctor(project)
    assert states(found) == {
        "permissions": "warning",
        "disk": "ok",
        "journal": "ok",
        "model": "ok",
        "index": "fixed",  # opening an index checks it against the journal and rebuilds a damaged one
        "vectors": "warning",
        "code index": "warning",
        "watcher": "ok",
        "hooks": "skipped",
        "context": "ok",
    }, found
    assert "3 memories have no vector" in found["vectors"]["detail"]
    assert "new or changed: 1" in found["code index"]["detail"]
    assert "no running server watches this tree" in found["code index"]["detail"]

    fixed = doctor(project, "--fix")
    assert {check for check, state in states(fixed).items() if state == "fixed"} == {"permissions", "vectors", "code index"}, fixed
    assert oct(project.data_dir.stat().st_mode & 0o777) == "0o700"
    after = states(doctor(project))
    assert after.pop("hooks") == "skipped" and set(after.values()) == {"ok"}, after
    async with connect(project) as ledger:
        assert (await ledger.call("recall", query="which port does service number 7 listen on?", k=1))["results"][0]["id"] == ids[7]
        assert (await ledger.call("find_symbol", name="nightly_export"))["symbols"]

    journal = project.data_dir / "journal.sqlite3"
    with sqlite3.connect(journal) as db:  # every page in the main file, so the damage is not masked by the WAL
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with journal.open("r+b") as file:  # the memories table's root page: its b-tree header
        file.seek(4096)
        file.write(b"\x07" * 8)
    damaged = journal.read_bytes()
    completed = run_cli(project, "doctor", "--fix")
    assert completed.returncode == 1 and "Traceback" not in completed.stderr, completed.stderr
    lines = {line.split()[1]: line for line in completed.stdout.splitlines()}
    assert lines["journal"].startswith("problem") and "malformed" in lines["journal"] and "may be lost" in lines["journal"]
    assert "project-ledger salvage" in lines["journal"]  # the procedure itself is run in test_salvage.py
    assert lines["index"].startswith("skipped")
    assert journal.read_bytes() == damaged
