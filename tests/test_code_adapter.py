"""The shipped code adapter (`search/code_adapter.py`): hash-checked on load, and maps vectors to unit vectors."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from project_ledger.search import code_adapter


def test_the_shipped_adapter_loads_and_gives_unit_vectors_that_differ_from_the_plain_ones() -> None:
    adapter = code_adapter.load_adapter()
    rng = np.random.default_rng(0)
    plain = rng.normal(size=(5, 384)).astype(np.float32)
    plain /= np.linalg.norm(plain, axis=1, keepdims=True)
    mapped = np.stack(adapter.documents(list(plain)))
    query = adapter.query(plain[0])
    assert np.allclose(np.linalg.norm(mapped, axis=1), 1.0, atol=1e-5) and np.isclose(np.linalg.norm(query), 1.0, atol=1e-5)
    assert mapped.dtype == np.float32 and query.shape == (384,)
    assert not np.allclose(mapped, plain, atol=1e-3)  # a trained map, not the identity
    assert adapter.documents([]) == []


def test_an_adapter_file_with_another_hash_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code_adapter, "ADAPTER_SHA256", "0" * 64)  # as if the shipped file had been changed
    with pytest.raises(RuntimeError, match="reinstall project-ledger"):
        code_adapter.load_adapter()


def test_maps_given_as_bytes_are_applied_as_matrix_products() -> None:
    swap = np.eye(384, dtype=np.float16)[::-1]  # reverses a vector's components
    buffer = io.BytesIO()
    np.savez(buffer, q=swap, d=2 * np.eye(384, dtype=np.float16))
    adapter = code_adapter.load_adapter(buffer.getvalue())
    vector = np.zeros(384, dtype=np.float32)
    vector[0] = 1.0
    assert adapter.query(vector)[-1] == pytest.approx(1.0)
    assert adapter.documents([vector])[0][0] == pytest.approx(1.0)  # scaled, then unit length again


def test_a_damaged_adapter_fails_code_embedding_alone_and_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from project_ledger.search.embedding import CodeEmbedder, OnnxEmbedder

    monkeypatch.setattr(code_adapter, "ADAPTER_SHA256", "0" * 64)  # as if the shipped file had been changed
    model = OnnxEmbedder(1, tmp_path)
    code = CodeEmbedder(model)
    assert not code.load()
    assert code.state == "failed" and code.detail is not None and "reinstall project-ledger" in code.detail
    assert model.state == "ready" and model.embed_query("which build tool").shape == (384,)  # memories keep the model
    with pytest.raises(RuntimeError, match="code adapter"):
        code.embed_query("parse a header line")


def test_a_symbol_vector_mapped_from_its_plain_one_is_the_one_the_model_and_adapter_give(tmp_path: Path) -> None:
    from project_ledger.search.embedding import CODE_IDENTITY, CodeEmbedder, OnnxEmbedder

    model = OnnxEmbedder(1, tmp_path)
    plain, adapted = CodeEmbedder(model, adapted=False), CodeEmbedder(model)
    texts = ["function parse_header: parse header\ndef parse_header(line):", "class LRUCache: lru cache"]
    assert adapted.base_identity == CODE_IDENTITY and plain.base_identity is None
    mapped = adapted.from_base(plain.embed_documents(texts))
    assert np.allclose(np.stack(mapped), np.stack(adapted.embed_documents(texts)), atol=1e-6)
    assert adapted.identity != plain.identity == CODE_IDENTITY
