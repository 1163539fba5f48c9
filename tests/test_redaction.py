"""Secrets never reach the disk: memories, imported exports and code symbols are redacted before they are stored.

The fixture holds realistic fake secrets of every type (random, in each provider's format) with the exact text
expected after redaction, and ordinary text that looks a little like secrets and must come back untouched.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from .conftest import Project, cli, serve

pytestmark = pytest.mark.anyio

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "secrets.json").read_text())


def ledger_bytes(project: Project) -> bytes:
    """Every file the ledger keeps: journal, WAL, index shards and state."""
    return b"".join(path.read_bytes() for path in project.data_dir.rglob("*") if path.is_file())


async def test_every_kind_of_secret_is_redacted_before_it_is_stored_and_ordinary_text_is_not(project: Project) -> None:
    async with serve(project) as ledger:
        stored: dict[str, dict] = {}
        for n, item in enumerate(FIXTURE["secrets"]):
            result = await ledger.call("remember", text=item["text"], tags=[f"case-{n}"])
            assert result["redacted"] >= 1 and item["type"] in result["redacted_types"], (item["type"], result)
            stored[result["id"]] = item
        for text in FIXTURE["clean"]:  # as turns, which are stored as said: no near-duplicate merging
            result = await ledger.call("remember", text=text, kind="turn", session="clean")
            assert result["redacted"] == 0, text
            assert (await ledger.call("recall", ids=[result["id"]]))["results"][0]["text"] == text
        fetched = await ledger.call("recall", ids=list(stored))
        assert {hit["id"]: hit["text"] for hit in fetched["results"]} == {id_: item["redacted"] for id_, item in stored.items()}
        await ledger.settled()
    on_disk = ledger_bytes(project)
    leaked = [item["type"] for item in FIXTURE["secrets"] if item["secret"].encode() in on_disk]
    assert not leaked, f"secrets found on disk: {leaked}"


async def test_code_symbols_are_redacted_and_redaction_can_be_turned_off(tmp_path: Path) -> None:
    aws = next(item for item in FIXTURE["secrets"] if item["type"] == "aws_access_key")["secret"]
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "deploy.py").write_text(
        f'def upload(bucket: str) -> None:\n    """Uploads with the CI user\'s key {aws} (rotate it monthly)."""\n'
    )
    project = Project(tmp_path / "repo")
    async with serve(project) as ledger:
        with anyio.fail_after(60):
            while not (found := await ledger.call("find_symbol", name="upload"))["symbols"]:
                await anyio.sleep(0.2)
        assert "[REDACTED:aws_access_key]" in found["symbols"][0]["doc"] and aws not in found["symbols"][0]["doc"]
    assert aws.encode() not in ledger_bytes(project)

    verbatim = Project(tmp_path / "verbatim", env={"LEDGER_REDACT_SECRETS": "false", "LEDGER_CODE_INDEX": "false"})
    verbatim.root.mkdir()
    item = next(item for item in FIXTURE["secrets"] if item["type"] == "github_token")
    async with serve(verbatim) as ledger:
        result = await ledger.call("remember", text=item["text"])
        assert result["redacted"] == 0
        assert (await ledger.call("recall", ids=[result["id"]]))["results"][0]["text"] == item["text"]
    cli(verbatim, "export", str(tmp_path / "verbatim.jsonl"))

    imported = Project(tmp_path / "imported", env={"LEDGER_CODE_INDEX": "false"})
    imported.root.mkdir()
    assert cli(imported, "import", str(tmp_path / "verbatim.jsonl"), "--json")["redacted"] == 1
    assert item["secret"].encode() not in ledger_bytes(imported)
    assert item["redacted"] in [json.loads(line)["text"] for line in cli(imported, "export").splitlines()[1:]]
