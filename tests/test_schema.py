"""The journal's numbered migrations (`storage/schema.py`, applied by `storage/journal.py`): a journal left at any
earlier schema version, with rows in it, opens upgraded to the latest and keeps every row."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from project_ledger.errors import StorageError
from project_ledger.storage.journal import Anchor, Journal
from project_ledger.storage.schema import MIGRATIONS

LATEST = len(MIGRATIONS)
EARLIER = range(LATEST)  # 0 is a new, empty file
AT = "2026-03-02T10:00:00Z"


def memory_row(seq: int, memory_id: str, text: str, kind: str, **columns: object) -> dict[str, object]:
    row: dict[str, object] = {
        "seq": seq, "id": memory_id, "text": text, "kind": kind, "content_hash": f"hash-{seq}",
        "created_at": AT, "updated_at": AT, "rev": seq,
    }  # fmt: skip
    return row | columns


MEMORIES = [
    memory_row(1, "m0000000001", "Invoices are sent on the 1st.", "decision", tags='["billing"]', superseded_by="m0000000002"),
    memory_row(2, "m0000000002", "Invoices are sent on the 3rd business day.", "decision", pinned=1, files='["billing.py"]'),
    memory_row(3, "m0000000003", "We decided to use Stripe for card payments.", "turn", session="s1", role="user"),
    memory_row(4, "m0000000004", "", "note", deleted_at=AT),  # a tombstone
]


def journal_at(path: Path, version: int) -> None:
    """A journal as a release at schema `version` left it: its migrations applied, and rows in every table it had."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        for migration in MIGRATIONS[:version]:
            migration(db)
        db.execute(f"PRAGMA user_version = {version}")
        if version >= 1:
            for row in MEMORIES:
                db.execute(f"INSERT INTO memories ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
            db.execute("INSERT INTO embeddings (seq, model, vector) VALUES (1, 'model-a', ?)", (b"\x00\x01" * 8,))
            db.execute("UPDATE counters SET value = 4 WHERE name = 'rev'")
            db.execute("UPDATE counters SET value = 1 WHERE name = 'forgets'")
            db.execute("UPDATE meta SET value = 'feedc0de12345678' WHERE key = 'journal_id'")
        if version >= 2:
            db.execute("INSERT INTO code_files VALUES ('billing.py', 'python', 120, 1, 'file-hash', 6, ?)", (AT,))
            db.execute(
                "INSERT INTO code_symbols VALUES (1, 'billing.py', 'send_invoice', 'send_invoice', 'function', 'python', 1, 6, "
                "'def send_invoice(customer_id: str) -> None', '', '', 'symbol-hash', 'def send_invoice', 'embed-hash', 1)"
            )
            db.execute("INSERT INTO code_refs VALUES ('send_invoice', 'jobs.py', 'call', '[3]', 1)")
            db.execute("UPDATE counters SET value = 1 WHERE name IN ('code_rev', 'code_tree')")
        if version >= 3:
            db.execute("INSERT INTO memory_links VALUES (2, 'file', 'billing.py', '', 'file-hash')")


def user_version(path: Path) -> int:
    with closing(sqlite3.connect(path)) as db:
        return db.execute("PRAGMA user_version").fetchone()[0]


def test_there_is_an_earlier_version_to_upgrade_from() -> None:
    assert LATEST >= 2


@pytest.mark.parametrize("version", EARLIER)
def test_a_journal_at_an_earlier_version_opens_upgraded_with_every_row_kept(tmp_path: Path, version: int) -> None:
    path = tmp_path / "journal.sqlite3"
    journal_at(path, version)
    journal = Journal(path)
    try:
        assert user_version(path) == LATEST
        if version >= 1:
            assert [m.id for m in journal.history("m0000000002")] == ["m0000000001", "m0000000002"]
            old, new = journal.get("m0000000001"), journal.get("m0000000002")
            assert (old.tags, old.superseded_by) == (["billing"], "m0000000002")
            assert (new.text, new.pinned, new.files) == ("Invoices are sent on the 3rd business day.", True, ["billing.py"])
            counts = journal.counts()
            assert (counts.by_kind, counts.pinned, counts.superseded, counts.forgotten) == ({"decision": 1, "turn": 1}, 1, 1, 1)
            assert journal.vectors([1], "model-a") == {1: b"\x00\x01" * 8}
            assert (journal.rev(), journal.forget_count(), journal.journal_id()) == (4, 1, "feedc0de12345678")
        if version >= 2:
            with closing(sqlite3.connect(path)) as db:
                assert db.execute("SELECT qualname, signature FROM code_symbols").fetchall() == [
                    ("send_invoice", "def send_invoice(customer_id: str) -> None")
                ]
                assert db.execute("SELECT name, path FROM code_refs").fetchall() == [("send_invoice", "jobs.py")]
        if version >= 3:
            assert journal.anchors() == {"m0000000002": [Anchor("file", "billing.py", "", "file-hash")]}
        assert journal.integrity() == []

        # what the later migrations added works on the upgraded journal
        turn, _ = journal.insert(
            text="Let's use Postgres 16 for the ledger tables.", kind="turn", tags=[], session="s2", role="user",
            files=[], symbols=[], pinned=False, supersedes=None,
        )  # fmt: skip
        captured, created = journal.insert(
            text="Use Postgres 16.", kind="decision", tags=["captured"], session="s2", role=None, files=["db.py"], symbols=[],
            pinned=False, supersedes=None, anchors=[Anchor("file", "db.py", "", None)], sources=[(turn, "captured")],
        )  # fmt: skip
        assert created and journal.sources([captured], ["captured"]) == {captured: [turn]}
        assert journal.anchors([captured]) == {captured: [Anchor("file", "db.py", "", None)]}
        assert journal.forget(turn) == [captured]  # forgetting a turn forgets what was captured from it
        assert journal.transcript_offset("s2", "/t/s2.jsonl") == 0
        journal.set_transcript_offset("s2", "/t/s2.jsonl", 120)
        journal.set_transcript_offset("s2", "/t/s2.jsonl", 360)
        assert (journal.transcript_offset("s2", "/t/s2.jsonl"), journal.transcript_offset("s3", "/t/s2.jsonl")) == (360, 0)
    finally:
        journal.close()

    Journal(path).close()  # opening an up-to-date journal again changes nothing
    assert user_version(path) == LATEST


def test_a_migration_that_fails_leaves_the_journal_at_its_version_untouched(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    journal_at(path, 2)
    with closing(sqlite3.connect(path, isolation_level=None)) as db:  # in the way of migration 3
        db.execute("CREATE TABLE memory_links (note TEXT)")
    with pytest.raises(StorageError, match="memory_links already exists"):
        Journal(path)
    assert user_version(path) == 2
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == len(MEMORIES)
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'memories_superseded'").fetchall() == []
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'memory_sources'").fetchall() == []
