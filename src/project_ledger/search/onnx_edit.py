"""The bundled model's graph rewrites, made with `onnx` once, when the prepared model is written
(`search/bundled_model.py`); never at a load.

Each rewrite matches one shape of nodes that the exporter of the bundled int8 all-MiniLM-L6-v2 wrote, and raises
ValueError when the graph has none, so that another model is never edited by guess. No library does these: ONNX
Runtime's optimisers keep a graph's meaning for every input, and each rewrite here holds only for how the ledger
runs this model (one unpadded text a run, a scale per row) or trades a little precision for speed (integer matrix
products), which an optimiser must not decide alone. What each one buys is measured in docs/benchmarks.md
(Embedding, Memory of `serve`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import onnx
from onnx import numpy_helper

MICROSOFT = "com.microsoft"  # ONNX Runtime's own operators: DynamicQuantizeMatMul, Gelu


class _Graph:
    """A model's nodes with who makes and who reads each value, and the edits to make: the nodes at `dropped` left
    out, each node at `replaced` swapped for the nodes given, in its place (after its inputs exist, before any use of
    its outputs)."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.nodes = [_copy(node) for node in model.graph.node]
        self.made_by = {output: i for i, node in enumerate(self.nodes) for output in node.output}
        self.users: dict[str, list[int]] = {}  # a value a node reads twice is listed twice
        for i, node in enumerate(self.nodes):
            for name in node.input:
                self.users.setdefault(name, []).append(i)
        self.dropped: set[int] = set()
        self.replaced: dict[int, list[onnx.NodeProto]] = {}

    def maker(self, value: str, op_type: str) -> int | None:
        i = self.made_by.get(value)
        return i if i is not None and self.nodes[i].op_type == op_type else None

    def apply(self, none_found: str) -> None:
        """Write the edited node list back into the model; raise ValueError(`none_found`) if there is no edit."""
        if not self.replaced:
            raise ValueError(none_found)
        kept: list[onnx.NodeProto] = []
        for i, node in enumerate(self.nodes):
            if i in self.replaced:
                kept += self.replaced[i]
            elif i not in self.dropped:
                kept.append(node)
        del self.model.graph.node[:]
        self.model.graph.node.extend(kept)


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


def _like(node: onnx.NodeProto, inputs: Iterable[str], outputs: Iterable[str] | None = None, **fields: str) -> onnx.NodeProto:
    """`node` (its attributes and domain kept) reading `inputs`, writing `outputs`, with `fields` changed."""
    out = _copy(node)
    del out.input[:]
    out.input.extend(inputs)
    if outputs is not None:
        del out.output[:]
        out.output.extend(outputs)
    for name, value in fields.items():
        setattr(out, name, value)
    return out


def _microsoft(op_type: str, inputs: list[str], outputs: Iterable[str], name: str) -> onnx.NodeProto:
    return onnx.helper.make_node(op_type, inputs, list(outputs), name=name, domain=MICROSOFT)


def gather_before_dequantize(model: onnx.ModelProto, table: str) -> None:
    """`Gather(Mul(Cast(table_q), table_scale), ids)` becomes `Mul(Cast(Gather(table_q, ids)), Gather(table_scale, ids))`:
    ONNX Runtime would fold the whole table to float at load (47 MB), of which a text reads a few rows.

    `table_scale` must hold one scale per row, so each value is the same product of the same two floats: the output
    does not change by a bit. Raises ValueError unless the table has exactly that one Cast, Mul and Gather."""
    graph = _Graph(model)
    nodes = graph.nodes
    quantized, scale = f"{table}_q", f"{table}_scale"

    def only(kind: str, test: object) -> int:
        found = [i for i, n in enumerate(nodes) if n.op_type == kind and test(n)]  # type: ignore[operator]
        if len(found) != 1:
            raise ValueError(f"expected one {kind} node for {table}, found {len(found)}")
        return found[0]

    cast = only("Cast", lambda n: list(n.input) == [quantized])
    floats = nodes[cast].output[0]
    mul = only("Mul", lambda n: list(n.input) == [floats, scale] and list(n.output) == [table])
    gather = only("Gather", lambda n: n.input[:1] == [table])
    if any(table in n.input or floats in n.input for i, n in enumerate(nodes) if i not in (mul, gather)):
        raise ValueError(f"{table} has uses other than one Gather")
    looked_up = nodes[gather]
    ids = looked_up.input[1]
    rows_q, rows_scale = f"{table}_rows_q", f"{table}_rows_scale"
    graph.dropped |= {cast, mul}
    graph.replaced[gather] = [
        _like(looked_up, [quantized, ids], [rows_q], name=f"{looked_up.name}_q"),
        _like(looked_up, [scale, ids], [rows_scale], name=f"{looked_up.name}_scale"),
        _like(nodes[cast], [rows_q]),
        _like(nodes[mul], [floats, rows_scale], looked_up.output),
    ]
    graph.apply(f"nothing to edit for {table}")


def without_nan_guards(model: onnx.ModelProto) -> None:
    """Each `Where(IsNaN(p), zero, p)` after a `Softmax` (p) is left out: the attention reads p.

    The exporter guards a softmax against a row whose every key is masked. This model masks keys only, and no text
    masks its first token ([CLS]), so p never holds NaN and the guard only copies it (about a tenth of the CPU time).
    Raises ValueError if the graph has no such guard."""
    graph = _Graph(model)
    nodes, users = graph.nodes, graph.users
    for i, node in enumerate(nodes):
        softmax = graph.maker(node.input[0], "Softmax") if node.op_type == "IsNaN" else None
        if softmax is None:
            continue
        probabilities = node.input[0]
        guards = [u for u in users[node.output[0]] if nodes[u].op_type == "Where" and nodes[u].input[2] == probabilities]
        if len(guards) != 1 or len(users[node.output[0]]) != 1 or sorted(users[probabilities]) != sorted([i, guards[0]]):
            continue
        graph.replaced[softmax] = [_like(nodes[softmax], nodes[softmax].input, nodes[guards[0]].output)]
        graph.dropped |= {i, guards[0]}
    graph.apply("the model has no Where(IsNaN(p), 0, p) after a Softmax")


def integer_matmuls(model: onnx.ModelProto) -> None:
    """Each `MatMul(x, Mul(Cast(w_q), w_scale))` becomes ONNX Runtime's `DynamicQuantizeMatMul(x, w_q, w_scale)`:
    the weights stay int8 and the activations are quantized per product, which runs on the CPU's integer units.

    This changes the output a little (cosine about 0.99 to the float products) for about half the CPU seconds.
    `w_scale` must be one scale per output column, which ONNX Runtime checks as it loads the model. Raises
    ValueError if no product has this shape of nodes."""
    graph = _Graph(model)
    nodes, users = graph.nodes, graph.users
    for i, node in enumerate(nodes):
        if node.op_type != "MatMul" or len(node.input) != 2:
            continue
        mul = graph.maker(node.input[1], "Mul")
        if mul is None or len(users[node.input[1]]) != 1:
            continue
        cast = graph.maker(nodes[mul].input[0], "Cast")
        if cast is None or len(users[nodes[cast].output[0]]) != 1:
            continue
        weights, scale = nodes[cast].input[0], nodes[mul].input[1]
        if not (weights.endswith("_q") and scale.endswith("_scale")):
            continue
        graph.replaced[i] = [_microsoft("DynamicQuantizeMatMul", [node.input[0], weights, scale], node.output, node.name)]
        graph.dropped |= {mul, cast}
    graph.apply("the model has no MatMul of int8 weights dequantized by a Cast and a Mul")
    if all(opset.domain != MICROSOFT for opset in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid(MICROSOFT, 1))


def biases_in_products(model: onnx.ModelProto) -> None:
    """Each `Add(DynamicQuantizeMatMul(x, w_q, w_scale), bias)` (bias a constant, the product read by that Add alone)
    becomes `DynamicQuantizeMatMul(x, w_q, w_scale, "", bias)`: the bias is added as the integers are scaled back.

    Bit for bit the same output once the layer norms stay unfused (`embedding.INTEGER_UNFUSED`). Raises ValueError
    if no product has such an Add."""
    graph = _Graph(model)
    nodes, users = graph.nodes, graph.users
    constants = {tensor.name for tensor in model.graph.initializer}
    for i, node in enumerate(nodes):
        if node.op_type != "Add" or len(node.input) != 2:
            continue
        for value, bias in ((node.input[0], node.input[1]), (node.input[1], node.input[0])):
            product = graph.maker(value, "DynamicQuantizeMatMul")
            if product is None or bias not in constants or len(users[value]) != 1 or len(nodes[product].input) != 3:
                continue
            graph.replaced[product] = [_like(nodes[product], [*nodes[product].input, "", bias], node.output)]
            graph.dropped.add(i)
            break
    graph.apply("the model has no DynamicQuantizeMatMul followed by the Add of a constant bias")


def without_attention_mask(model: onnx.ModelProto, mask_input: str = "attention_mask") -> None:
    """Each `Add(scores, mask)` before an attention `Softmax` is left out, where the scores are a MatMul's and the mask
    is computed from the graph input `mask_input`; ONNX Runtime drops the then unused nodes that made the mask.

    Only for a session that runs one unpadded text at a time: its mask adds 0 to every score, so the output is bit
    for bit the same (a padded batch would attend to its padding). Raises ValueError if no softmax reads such a sum."""
    graph = _Graph(model)
    nodes = graph.nodes

    @functools.cache
    def from_mask(value: str) -> bool:
        maker = graph.made_by.get(value)
        return value == mask_input or (maker is not None and any(from_mask(name) for name in nodes[maker].input if name))

    for i, node in enumerate(nodes):
        total = graph.maker(node.input[0], "Add") if node.op_type == "Softmax" and node.input else None
        if total is None or len(nodes[total].input) != 2:
            continue
        scores, mask = nodes[total].input
        if graph.maker(mask, "MatMul") is not None:
            scores, mask = mask, scores
        if graph.maker(scores, "MatMul") is not None and from_mask(mask):
            graph.replaced[i] = [_like(node, [scores])]
            graph.dropped.add(total)
    graph.apply(f"the model has no Softmax of scores plus a mask made from {mask_input}")


def fused_gelus(model: onnx.ModelProto) -> None:
    """Each GELU spelled out as `x * (0.5 * (erf(x / sqrt 2) + 1))` becomes ONNX Runtime's `Gelu(x)`: one pass over the
    activations instead of five (ONNX Runtime then folds the bias before it in too). Its erf is a close approximation:
    the last bits change. The constants left unused go too. Raises ValueError if the graph has no such GELU."""
    graph = _Graph(model)
    nodes, users = graph.nodes, graph.users
    scalars = {
        tensor.name: float(numpy_helper.to_array(tensor).reshape(-1)[0])
        for tensor in model.graph.initializer
        if tensor.data_type == onnx.TensorProto.FLOAT and math.prod(tensor.dims) == 1
    }

    def step(name: str, op_type: str, constant: float | None) -> tuple[int, str] | None:
        """The node making `name` if it is `op_type` of one value and `constant` (None: of the value alone), read
        once: (node, the value)."""
        i = graph.maker(name, op_type)
        if i is None or len(users[name]) != 1:
            return None
        inputs = nodes[i].input
        if constant is None:
            return (i, inputs[0]) if len(inputs) == 1 else None
        for value, other in ((inputs[0], inputs[1]), (inputs[1], inputs[0])) if len(inputs) == 2 else ():
            if other in scalars and abs(scalars[other] - constant) < 1e-6 and not (op_type == "Div" and other == inputs[0]):
                return i, value
        return None

    for i, node in enumerate(nodes):
        if node.op_type != "Mul" or len(node.input) != 2:
            continue
        for x, rest in ((node.input[0], node.input[1]), (node.input[1], node.input[0])):
            half = step(rest, "Mul", 0.5)
            plus_one = half and step(half[1], "Add", 1.0)
            erf = plus_one and step(plus_one[1], "Erf", None)
            scaled = erf and step(erf[1], "Div", math.sqrt(2))
            if half and plus_one and erf and scaled and scaled[1] == x:
                graph.replaced[i] = [_microsoft("Gelu", [x], node.output, node.name)]
                graph.dropped |= {half[0], plus_one[0], erf[0], scaled[0]}
                break
    graph.apply("the model has no GELU spelled out with Erf")
    still_read = {name for node in model.graph.node for name in node.input}
    kept = [tensor for tensor in model.graph.initializer if tensor.name not in scalars or tensor.name in still_read]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)  # ONNX Runtime warns of unused constants
