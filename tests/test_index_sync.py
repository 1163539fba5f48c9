"""The index's catch-up with the journal's vectors, on a ledger opened in this thread with no worker running, so
nothing is embedded in the background unless a test asks for it."""

from __future__ import annotations

from project_ledger.memory.service import LedgerService
from project_ledger.storage.index_sync import FRESH_EMBED_MOST


def missing(ledger: LedgerService) -> int:
    return ledger.journal.count_missing_embeddings(ledger.sync.embedder.identity)


def test_a_recall_right_after_a_write_finds_the_new_memory_by_meaning_too(ledger: LedgerService) -> None:
    ledger.sync.open_now()
    ledger.sync.embedder.load()
    written = ledger.remember("The nightly export job writes its archives to the cold storage bucket.").id
    assert missing(ledger) == 1

    explained = ledger.explain_recall("where do the nightly exports end up", k=3)

    assert missing(ledger) == 0
    hit = next(candidate for candidate in explained.results if candidate.id == written)
    assert hit.dense is not None, "the new memory was ranked on its keywords alone"


def test_a_longer_backlog_is_left_to_the_worker_so_no_search_waits_for_it(ledger: LedgerService) -> None:
    ledger.sync.open_now()
    ledger.sync.embedder.load()
    for n in range(FRESH_EMBED_MOST + 1):
        ledger.remember(f"Imported decision {n}: shard {n} keeps its own retention window of {n + 3} days.")

    ledger.explain_recall("retention window", k=3)

    assert missing(ledger) == FRESH_EMBED_MOST + 1
