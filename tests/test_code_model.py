"""The shipped code model (`search/code_model.py`): hash-checked, swapped into the bundled graph, prepared like it,
and run beside the memories' model without touching it."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from project_ledger.search import code_model
from project_ledger.search.bundled_model import PREPARED_TABLE, prepare, shipped_graph
from project_ledger.search.embedding import CODE_IDENTITY, TRAINED_CODE_IDENTITY, CodeEmbedder, OnnxEmbedder

BIAS = "inner.encoder.layer.0.attention.self.query.bias"


def npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def test_the_code_model_prepares_to_its_pinned_graph_with_the_bundled_token_table() -> None:
    graph, table = prepare(code_model.CODE_MODEL)
    assert hashlib.sha256(graph).hexdigest() == code_model.CODE_PREPARED_GRAPH
    assert hashlib.sha256(table).hexdigest() == PREPARED_TABLE  # the token table was not trained: one for both


def test_the_code_model_changes_the_encoder_layers_alone() -> None:
    bundled = {t.name: numpy_helper.to_array(t) for t in onnx.load_from_string(shipped_graph()).graph.initializer}
    with np.load(io.BytesIO(code_model.trained_weights())) as arrays:
        names = set(arrays.files)
        assert names and all(name in bundled and arrays[name].shape == bundled[name].shape for name in names)
        moved = [
            arrays[name].any() if arrays[name].dtype == np.int8 else not np.array_equal(arrays[name], bundled[name])
            for name in names
        ]  # an int8 matrix is stored as its difference from the bundled one
        assert sum(moved) > len(names) // 2  # trained, not a copy
    assert not any("embeddings" in name for name in names)  # the token and position tables are the bundled ones


def test_weights_replace_the_initializers_they_name_and_weights_that_do_not_fit_are_refused() -> None:
    source = shipped_graph()
    bias = np.arange(384, dtype=np.float32)
    swapped = onnx.load_from_string(code_model.with_weights(source, npz(**{BIAS: bias})))
    assert np.array_equal(next(numpy_helper.to_array(t) for t in swapped.graph.initializer if t.name == BIAS), bias)
    matrix = next(
        t for t in onnx.load_from_string(source).graph.initializer if t.name.endswith("_q") and t.name.startswith("val_")
    )
    before = numpy_helper.to_array(matrix)
    step = np.where(before < 127, 1, -1).astype(np.int8)  # one quantization step, within int8 everywhere
    swapped = onnx.load_from_string(code_model.with_weights(source, npz(**{matrix.name: step})))
    after = next(numpy_helper.to_array(t) for t in swapped.graph.initializer if t.name == matrix.name)
    assert np.array_equal(after.astype(np.int16), before.astype(np.int16) + step)  # an int8 matrix: a difference
    too_far = {matrix.name: np.full(before.shape, 127, dtype=np.int8)}
    for wrong in ({BIAS: bias[:10]}, {BIAS: bias.astype(np.float64)}, {"no.such.tensor": bias}, too_far):
        with pytest.raises(RuntimeError, match="does not fit the bundled graph; reinstall project-ledger"):
            code_model.with_weights(source, npz(**wrong))


def test_a_code_model_file_with_another_hash_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code_model, "CODE_MODEL_SHA256", "0" * 64)  # as if the shipped file had been changed
    with pytest.raises(RuntimeError, match="reinstall project-ledger"):
        code_model.trained_weights()


def test_a_damaged_code_model_fails_code_embedding_alone_and_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing prepared yet: the file is read
    monkeypatch.setattr(code_model, "CODE_MODEL_SHA256", "0" * 64)
    model = OnnxEmbedder(1, tmp_path)
    code = CodeEmbedder(model)
    assert not code.load()
    assert code.state == "failed" and code.detail is not None and "reinstall project-ledger" in code.detail
    assert model.load() and model.embed_query("which build tool").shape == (384,)  # memories keep their model
    with pytest.raises(RuntimeError, match="code model has sha256"):
        code.embed_query("parse a header line")


def test_the_code_model_gives_unit_vectors_of_its_own_under_its_own_identity(tmp_path: Path) -> None:
    model = OnnxEmbedder(1, tmp_path)
    trained, plain = CodeEmbedder(model), CodeEmbedder(model, trained=False)
    assert trained.identity == TRAINED_CODE_IDENTITY and plain.identity == CODE_IDENTITY != model.identity
    texts = ["function parse_header: parse header\ndef parse_header(line):", "class LRUCache: lru cache"]
    vectors, before = np.stack(trained.embed_documents(texts)), np.stack(plain.embed_documents(texts))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(vectors, before, atol=1e-2)
    question = trained.embed_query("Parse one header line.")
    assert question.shape == (384,) and not np.allclose(question, model.embed_query("Parse one header line."), atol=1e-2)
    assert float(question @ vectors[0]) > float(question @ vectors[1])  # asked about parsing, the parser is nearer


def test_search_code_without_its_model_ranks_by_words_and_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from project_ledger.config import Settings
    from project_ledger.factory import open_ledger

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing prepared yet: the file is read
    monkeypatch.setattr(code_model, "CODE_MODEL_SHA256", "0" * 64)
    root = tmp_path / "project"
    root.mkdir()
    (root / "geometry.py").write_text("def distance_to(a, b):\n    return abs(a - b)\n", encoding="utf-8")
    ledger = open_ledger(Settings(root=root, data_dir=tmp_path / "data", watch=False), root)
    try:
        code = ledger.require_code()
        code.indexer.scan()
        assert not code.search.load_model()
        code.search.open_now()
        found = code.search_code("distance to", 5)
        assert found.mode == "bm25-only" and [hit.name for hit in found.results] == ["distance_to"]
        assert found.note is not None and "the code model could not be loaded" in found.note
        assert "reinstall project-ledger" in found.note
    finally:
        ledger.close()
