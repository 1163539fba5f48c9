"""The code model: the bundled all-MiniLM-L6-v2 with its six encoder layers fine-tuned here for questions about code.

Trained on CPU from (docstring summary, symbol text) pairs of public PyPI and npm packages, never on the trees
that measure code search (`training/`). Only the encoder layers changed, so the file holds just those, quantized
as the bundled model's are (int8, a scale per output column) and named as the bundled graph names them; the code
model is the bundled graph with them swapped in (`with_weights`), prepared like the bundled model
(`bundled_model.Variant`) and sharing its token table and tokenizer. The file is checked against CODE_MODEL_SHA256
before use: a changed file fails the load (code search then runs on BM25 and says why), as a changed bundled model
does.

The questions have an encoder of their own, the query model (QUERY_MODEL, `code_query_model.npz`): the code model
trained further on the question side alone, against the code model's own vectors of every symbol of a package
(`training/finetune_queries.py`), which trains only its biases and layer norms: its file holds those alone (130 KB),
swapped into the code model's graph, and is checked and prepared the same way. Symbols keep the code model's
vectors, so an index embedded before it came needs nothing done.
"""

from __future__ import annotations

import hashlib
import io
from importlib import resources

from project_ledger.search.bundled_model import Variant, shipped_graph

CODE_MODEL_FILE = "code_model.npz"
CODE_MODEL_SHA256 = "abd1bb361782551e0851cb956c34e6eb116984b46af300e40b4662d8304c2d43"
# What preparing the code model gives (`bundled_model.prepare`); the token table is the bundled one.
CODE_PREPARED_GRAPH = "9a4f735a3cca1aaa422ad0e6cf0d8d7074efde77987b63afff1b0de2f18fe3c4"
QUERY_MODEL_FILE = "code_query_model.npz"
QUERY_MODEL_SHA256 = "7cb9be6bf39feadb9791fdb94603312138737d5f1ce924536d4c60d2420e0811"
QUERY_PREPARED_GRAPH = "4c7f0cb4ec9a395fd86e57bc7257d700547d86a088d710ca957dbecfc88d4554"


def trained_weights(file: str = CODE_MODEL_FILE) -> bytes:
    """A shipped file's bytes (the code model's, or the query model's), after its hash check."""
    expected, what = (CODE_MODEL_SHA256, "code model") if file == CODE_MODEL_FILE else (QUERY_MODEL_SHA256, "code query model")
    content = resources.files(__package__).joinpath("trained", file).read_bytes()
    actual = hashlib.sha256(content).hexdigest()
    if actual != expected:
        raise RuntimeError(f"the {what} has sha256 {actual}, expected {expected}; reinstall project-ledger")
    return content


def with_weights(graph: bytes, weights: bytes) -> bytes:
    """`graph` with each initializer `weights` (an npz file) names replaced by its array, which must have the
    shape and type of the one it replaces; an int8 array is the difference from the one it replaces (a fine-tune
    moves most quantized weights by one step at most, so the differences compress well)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(graph)
    tensors = {tensor.name: tensor for tensor in model.graph.initializer}
    with np.load(io.BytesIO(weights)) as arrays:
        for name in arrays.files:
            value, tensor = arrays[name], tensors.get(name)
            kind = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
            if tensor is None or tuple(tensor.dims) != value.shape or tensor.data_type != kind:
                raise _misfit(name)
            if value.dtype == np.int8:
                value = numpy_helper.to_array(tensor).astype(np.int16) + value
                if value.min() < -128 or value.max() > 127:
                    raise _misfit(name)
                value = value.astype(np.int8)
            tensor.CopyFrom(numpy_helper.from_array(value, name))
    return model.SerializeToString()


def _misfit(name: str) -> RuntimeError:
    return RuntimeError(f"the code model's {name} does not fit the bundled graph; reinstall project-ledger")


def _code_graph() -> bytes:
    return with_weights(shipped_graph(), trained_weights())


def _query_graph() -> bytes:
    return with_weights(_code_graph(), trained_weights(QUERY_MODEL_FILE))


CODE_MODEL = Variant(f"minilm-code-{CODE_MODEL_SHA256[:12]}-{CODE_PREPARED_GRAPH[:12]}", CODE_PREPARED_GRAPH, _code_graph)
QUERY_MODEL = Variant(
    f"minilm-code-query-{QUERY_MODEL_SHA256[:12]}-{QUERY_PREPARED_GRAPH[:12]}", QUERY_PREPARED_GRAPH, _query_graph
)
