"""The embedder (`search/embedding.py`) with the bundled model: batches spread over cores give each text its own
vector, in the order the texts came, the same as one core and as the text embedded alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from project_ledger.search.embedding import DOCUMENT_BATCH, create_embedder

from .conftest import shared_embedder

TEXTS = [
    "def retry(call, attempts=3)",
    "Back off exponentially between attempts, starting at 250 ms and doubling up to a cap of ten seconds.",
    "class Console",
    "We chose Postgres 16 over MySQL for the JSONB indexes.",
    *(f"def helper_{i}(value: int) -> int:\n    return value * {i}" + " # padding" * i for i in range(3 * DOCUMENT_BATCH)),
]


def test_batches_on_several_cores_keep_each_texts_vector_in_place(tmp_path: Path) -> None:
    spread = create_embedder(None, None, tmp_path, 2)
    one_core = create_embedder(None, None, tmp_path, 1)
    assert spread.load() and one_core.load()
    vectors = spread.embed_documents(TEXTS)
    assert len(vectors) == len(TEXTS)
    assert np.array_equal(np.array(vectors), np.array(one_core.embed_documents(TEXTS)))
    for text, vector in zip(TEXTS[:6], vectors, strict=False):
        alone = shared_embedder().embed_documents([text])[0]
        assert np.allclose(vector, alone, atol=1e-5), text  # padding in a batch changes nothing but rounding
