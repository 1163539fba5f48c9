"""The searches `recall` and `remember` make, each on an index caught up with the journal first.

`IndexSync` keeps the index current in the background; a search cannot wait for its next round (a memory written a
moment ago, by this process or another, must be found), so every search here catches up under the same lock as the
worker (`IndexSync.caught_up`), then asks the index. A failure of the backend becomes `IndexUnavailable`.
"""

from __future__ import annotations

from project_ledger.errors import IndexUnavailable, LedgerError
from project_ledger.search.fusion import coverage, with_feedback
from project_ledger.search.index import Candidates, Hit, SearchFilter
from project_ledger.search.sparse import SparseVec
from project_ledger.search.tuning import CandidateParams
from project_ledger.storage.index_sync import IndexSync
from project_ledger.storage.journal import Journal


class SearchGateway:
    def __init__(self, sync: IndexSync, journal: Journal) -> None:
        self._sync = sync
        self._journal = journal

    def terms(self, query: str) -> SparseVec:
        """The query's BM25 terms, once per question: its searches and coverage all take them."""
        return self._sync.encoder().query(query)

    def candidates(self, query: str, dense: list[float] | None, where: SearchFilter, limit: int) -> Candidates:
        """`search` for the terms of `query`."""
        return self.search(self.terms(query), dense, where, limit)

    def search(self, terms: SparseVec, dense: list[float] | None, where: SearchFilter, limit: int) -> Candidates:
        """Catch up with the journal, then search; no catch-up, here or in another process, interleaves.

        Any failure of the backend (a Qdrant server that stopped answering, a shard on a full disk) is
        `IndexUnavailable`: searches say so, and a write's near-duplicate check is skipped rather than failing it.
        """
        try:
            with self._sync.caught_up() as index:
                return index.candidates(dense, terms, where.conditions(), limit)
        except LedgerError:
            raise
        except Exception as exc:
            raise IndexUnavailable(
                f"the search index failed ({type(exc).__name__}: {exc}); the journal is intact, and the index catches up "
                "when it answers again"
            ) from exc

    def widened(self, terms: SparseVec, top: list[str], where: SearchFilter, limit: int, params: CandidateParams) -> list[Hit] | None:
        """The BM25 hits of the query's `terms` widened with the words the texts of its best hits share
        (`fusion.with_feedback`); None when no word is shared by two of them, so there is nothing to widen it with."""
        encoder = self._sync.encoder()
        hits = [encoder.document(text) for text in top]
        wanted = with_feedback(terms, hits, params.feedback_terms, params.feedback_weight)
        if len(wanted.indices) == len(terms.indices):
            return None
        return self.search(wanted, None, where, limit).sparse

    def cosines(self, query: list[float], seqs: list[int]) -> dict[int, float]:
        """The cosine similarity of `query` (a dense vector) to each of these memories' stored vectors; memories
        without a vector for the current model are left out."""
        import numpy as np  # kept off the import path of `serve`: the handshake does not need it

        blobs = self._journal.vectors(seqs, self._sync.embedder.identity)
        if not blobs:
            return {}
        wanted = np.asarray(query, dtype=np.float32)
        wanted /= np.linalg.norm(wanted) or 1.0
        found = {}
        for seq, blob in blobs.items():
            vector = np.frombuffer(blob, dtype=np.float32)
            found[seq] = float(np.dot(vector, wanted) / (np.linalg.norm(vector) or 1.0))
        return found

    def coverage(self, terms: SparseVec, texts: dict[int, str]) -> dict[int, float]:
        """How much of the query's `terms` each text contains (see `fusion.coverage`)."""
        encoder = self._sync.encoder()
        return {seq: coverage(terms, encoder.document(text)) for seq, text in texts.items()}
