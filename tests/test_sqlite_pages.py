"""Reading a SQLite file's rows page by page (`storage/sqlite_pages.py`), checked against SQLite reading them."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from project_ledger.storage.sqlite_pages import scan


def values(rng: random.Random, n: int) -> tuple[object, ...]:
    """Every storage class and width: small and large integers of either sign, floats, texts from empty to many
    pages long (overflow chains), non-ASCII text, blobs and NULL."""
    return (
        rng.choice([0, 1, -1, 127, -129, 32767, 2**23 - 1, -(2**31), 2**47, -(2**63), 2**63 - 1]),
        rng.uniform(-1e9, 1e9),
        "x" * rng.choice([0, 1, 11, 400, 4000, 4061, 4062, 9000, 70_000]) + f" {n} é ✓",
        rng.randbytes(rng.choice([0, 5, 5000])),
        None,
    )


@pytest.mark.parametrize("page_size", [512, 4096, 65536])
def test_every_row_is_read_from_the_pages_as_sqlite_reads_it(tmp_path: Path, page_size: int) -> None:
    path, rng = tmp_path / "rows.sqlite3", random.Random(page_size)
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA page_size = {page_size}")
        db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, a, b, c, d, e)")
        db.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", [(n * 7 - 50, *values(rng, n)) for n in range(300)])
        db.execute("DELETE FROM t WHERE k % 3 = 0")  # freed cells and pages among the live ones
        expected = {row[0]: [None, *row[1:]] for row in db.execute("SELECT * FROM t")}
    found = {row.rowid: row for row in scan(path) if row.columns == 6}
    assert {rowid: row.values for rowid, row in found.items()} == expected
    assert all(row.whole for row in found.values())


def test_rows_whose_overflow_chains_break_come_back_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "rows.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, name, body)")
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(n, f"row-{n}", "long text " * 2000) for n in range(1, 40)])
        overflow = [row[0] for row in db.execute("SELECT pageno FROM dbstat WHERE name = 't' AND pagetype = 'overflow'")]
    with path.open("r+b") as file:  # the second half of the overflow pages zeroed: each chain through them ends there
        for page in overflow[len(overflow) // 2 :]:
            file.seek((page - 1) * 4096)
            file.write(bytes(4096))
    rows = [row for row in scan(path) if row.columns == 3]
    cut = [row for row in rows if not row.whole]
    assert len(rows) == 39 and cut and all(row.values[1] == f"row-{row.rowid}" for row in rows)
    assert all(row.values[2] == "long text " * 2000 for row in rows if row.whole)
    assert all(len(row.values) == 2 for row in cut)


def test_a_file_that_is_not_sqlite_has_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "noise"
    path.write_bytes(random.Random(1).randbytes(64 * 1024))
    assert scan(path) == []
