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
from project_ledger.search.bundled_model import PREPARED_TABLE, Variant, prepare, shipped_graph
from project_ledger.search.embedding import CODE_IDENTITY, TRAINED_CODE_IDENTITY, CodeEmbedder, OnnxEmbedder

BIAS = "inner.encoder.layer.0.attention.self.query.bias"


def npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("variant", "expected"),
    [(code_model.CODE_MODEL, code_model.CODE_PREPARED_GRAPH), (code_model.QUERY_MODEL, code_model.QUERY_PREPARED_GRAPH)],
)
def test_the_code_and_query_models_prepare_to_their_pinned_graphs_with_the_bundled_token_table(
    variant: Variant, expected: str
) -> None:
    graph, table = prepare(variant)
    assert hashlib.sha256(graph).hexdigest() == expected
    assert hashlib.sha256(table).hexdigest() == PREPARED_TABLE  # the token table was not trained: one for all


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


def test_the_query_model_is_the_code_model_with_other_biases_and_layer_norms() -> None:
    with (
        np.load(io.BytesIO(code_model.trained_weights())) as code,
        np.load(io.BytesIO(code_model.trained_weights(code_model.QUERY_MODEL_FILE))) as query,
    ):
        floats = [name for name in code.files if code[name].ndim == 1]  # the biases and layer norms
        assert floats and set(query.files) == set(floats)  # no int8 matrix: the code model's stay under it
        assert all(not np.array_equal(code[name], query[name]) for name in floats)  # each one trained


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
    with pytest.raises(RuntimeError, match="the code model has sha256 .*reinstall project-ledger"):
        code_model.trained_weights()
    monkeypatch.setattr(code_model, "QUERY_MODEL_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="the code query model has sha256 .*reinstall project-ledger"):
        code_model.trained_weights(code_model.QUERY_MODEL_FILE)


def test_a_damaged_code_model_fails_code_embedding_alone_and_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing prepared yet: the file is read
    monkeypatch.setattr(code_model, "CODE_MODEL_SHA256", "0" * 64)
    model = OnnxEmbedder(1, tmp_path)
    code = CodeEmbedder(model)
    assert not code.load()
    assert code.state == "failed" and code.detail is not None and "reinstall project-ledger" in code.detail
    assert model.load() and model.embed_query("which build tool").shape == (384,)  # memories keep their model
    with pytest.raises(RuntimeError, match="code model has sha256"):
        code.embed_documents(["function parse_header: parse header"])


def test_a_damaged_query_model_leaves_code_search_unloaded_and_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(code_model, "QUERY_MODEL_SHA256", "0" * 64)
    code = CodeEmbedder(OnnxEmbedder(1, tmp_path))
    assert not code.load()  # the symbols' model loads, but questions could not be asked
    assert code.state == "failed" and code.detail is not None and "code query model has sha256" in code.detail


def test_questions_get_the_query_models_vectors_and_symbols_keep_the_code_models(tmp_path: Path) -> None:
    model = OnnxEmbedder(1, tmp_path)
    shipped, before = CodeEmbedder(model), CodeEmbedder(model, query_model=False)
    assert shipped.identity == before.identity == TRAINED_CODE_IDENTITY  # an index made before needs no new vectors
    texts = ["function parse_header: parse header\ndef parse_header(line):", "class LRUCache: lru cache"]
    assert np.array_equal(np.stack(shipped.embed_documents(texts)), np.stack(before.embed_documents(texts)))
    question, earlier = shipped.embed_query("Parse one header line."), before.embed_query("Parse one header line.")
    assert abs(float(np.linalg.norm(question)) - 1.0) < 1e-5 and not np.allclose(question, earlier, atol=1e-3)
    assert float(question @ earlier) > 0.8  # trained from the code model: the same space


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
