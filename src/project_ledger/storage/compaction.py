"""The compaction child: rebuild the embedded index from the journal into a folder, then optimize it.

    python -m project_ledger.storage.compaction JOURNAL TARGET MODEL_IDENTITY DIM

Started by `IndexSync` in the server. Building search graphs holds the
interpreter for minutes at 100k memories, so it runs here, at low priority, and
the server swaps the result in when this exits with status 0.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from project_ledger.search.edge_index import EdgeIndex
from project_ledger.search.index import MEMORY_PAYLOAD
from project_ledger.search.sparse import SparseEncoder
from project_ledger.storage.index_sync import apply_changes
from project_ledger.storage.journal import Journal


def compact(journal_path: Path, target: Path, model: str, dim: int) -> None:
    journal = Journal(journal_path)
    index = EdgeIndex(target, dim, model, MEMORY_PAYLOAD, may_hold=False)  # without room it fails, and is tried again later
    try:
        index.reset(journal.reindex_epoch())  # empty: apply_changes marks it erased through today's forgets
        apply_changes(journal, index, SparseEncoder(), model)
        index.optimize()
    finally:
        index.close()
        journal.close()


def main(argv: list[str]) -> None:
    if len(argv) != 4:
        raise SystemExit(__doc__)
    if hasattr(os, "nice"):
        os.nice(10)  # the server's requests come first
    journal_path, target, model, dim = argv
    compact(Path(journal_path), Path(target), model, int(dim))


if __name__ == "__main__":
    main(sys.argv[1:])
