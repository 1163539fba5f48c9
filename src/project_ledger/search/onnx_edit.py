"""Edits of an ONNX model's graph, on the protobuf wire format (no `onnx` package needed).

The bundled int8 MiniLM stores each weight as int8 plus a float scale, and turns it back into float with a
Cast and a Mul in the graph. ONNX Runtime folds those into float constants when it loads the model: for the
word-embedding table (30,522 × 384) that is 47 MB of float kept resident, of which a batch reads a few
hundred rows. `gather_before_dequantize` moves the row lookup in front of the Cast and the Mul, so only the
looked-up rows become float. The scale is per row, so each output value is the same product of the same two
floats as before: the vectors do not change by a single bit. Nor does `without_nan_guards`, which leaves out
copies the exporter put after each softmax.

The embedder's one session (queries, memories and code symbols) also gets `integer_matmuls` and `fused_gelus`, which
change the vectors a little (cosine about 0.995 to the float ones) for less than half the CPU time per text, then
`biases_in_products` and `without_attention_mask`, which change nothing more (one unpadded text a run).
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass, field

# Field numbers of onnx.proto3 (ModelProto.graph, GraphProto.node, NodeProto.input/output/name/op_type).
MODEL_GRAPH = 7
GRAPH_NODE = 1
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP_TYPE = 1, 2, 3, 4
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@dataclass
class _Field:
    number: int
    wire: int
    raw: bytes | memoryview  # the whole field as stored (key included), re-emitted untouched
    payload: memoryview | None = None  # a length-delimited field's content


def _fields(buf: memoryview) -> list[_Field]:
    out, pos = [], 0
    while pos < len(buf):
        start = pos
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        payload = None
        if wire == VARINT:
            _, pos = _varint(buf, pos)
        elif wire == FIXED64:
            pos += 8
        elif wire == FIXED32:
            pos += 4
        elif wire == LENGTH:
            size, pos = _varint(buf, pos)
            payload = buf[pos : pos + size]
            pos += size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated protobuf message")
        out.append(_Field(number, wire, buf[start:pos], payload))
    return out


def _length_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | LENGTH) + _encode_varint(len(payload)) + payload


@dataclass
class _Node:
    inputs: list[str]
    outputs: list[str]
    name: str
    op_type: str
    rest: list[bytes] = field(default_factory=list)  # attributes, domain, doc string: kept as they are

    @classmethod
    def parse(cls, payload: memoryview) -> _Node:
        node = cls([], [], "", "")
        for f in _fields(payload):
            text = bytes(f.payload).decode() if f.payload is not None and f.number <= NODE_OP_TYPE else ""
            if f.number == NODE_INPUT:
                node.inputs.append(text)
            elif f.number == NODE_OUTPUT:
                node.outputs.append(text)
            elif f.number == NODE_NAME:
                node.name = text
            elif f.number == NODE_OP_TYPE:
                node.op_type = text
            else:
                node.rest.append(bytes(f.raw))
        return node

    def encode(self) -> bytes:
        parts = [_length_field(NODE_INPUT, name.encode()) for name in self.inputs]
        parts += [_length_field(NODE_OUTPUT, name.encode()) for name in self.outputs]
        parts += [_length_field(NODE_NAME, self.name.encode()), _length_field(NODE_OP_TYPE, self.op_type.encode())]
        return b"".join(parts + self.rest)


def gather_before_dequantize(model: bytes, table: str) -> bytes:
    """The model with `Gather(Mul(Cast(table_q), table_scale), ids)` rewritten as
    `Mul(Cast(Gather(table_q, ids)), Gather(table_scale, ids))`.

    `table_scale` must hold one scale per row (shape [rows, 1]); raises ValueError if the graph does not have
    this exact shape of nodes, so a different model is never edited by guess.
    """
    top, graph, graph_fields, nodes = _graph(model)
    quantized, scale = f"{table}_q", f"{table}_scale"

    def only(kind: str, test: object) -> int:
        found = [i for i, n in nodes.items() if n.op_type == kind and test(n)]  # type: ignore[operator]
        if len(found) != 1:
            raise ValueError(f"expected one {kind} node for {table}, found {len(found)}")
        return found[0]

    cast = only("Cast", lambda n: n.inputs == [quantized])
    mul = only("Mul", lambda n: n.inputs == [nodes[cast].outputs[0], scale] and n.outputs == [table])
    gather = only("Gather", lambda n: n.inputs[:1] == [table])
    if any(table in n.inputs or nodes[cast].outputs[0] in n.inputs for i, n in nodes.items() if i not in (mul, gather)):
        raise ValueError(f"{table} has uses other than one Gather")
    looked_up = nodes[gather]
    ids, embedded = looked_up.inputs[1], looked_up.outputs[0]
    rows_q, rows_scale = f"{table}_rows_q", f"{table}_rows_scale"
    replacement = [
        _Node([quantized, ids], [rows_q], f"{looked_up.name}_q", "Gather", looked_up.rest),
        _Node([scale, ids], [rows_scale], f"{looked_up.name}_scale", "Gather", looked_up.rest),
        _Node([rows_q], nodes[cast].outputs, nodes[cast].name, "Cast", nodes[cast].rest),
        _Node([nodes[cast].outputs[0], rows_scale], [embedded], nodes[mul].name, "Mul", nodes[mul].rest),
    ]
    return _rebuilt(top, graph, graph_fields, {cast, mul}, {gather: replacement})


def _graph(model: bytes) -> tuple[list[_Field], _Field, list[_Field], dict[int, _Node]]:
    top = _fields(memoryview(model))
    graphs = [f for f in top if f.number == MODEL_GRAPH and f.payload is not None]
    if len(graphs) != 1:
        raise ValueError("the model has no single graph")
    graph_fields = _fields(graphs[0].payload)  # type: ignore[arg-type]  # checked above
    nodes = {i: _Node.parse(f.payload) for i, f in enumerate(graph_fields) if f.number == GRAPH_NODE and f.payload is not None}
    return top, graphs[0], graph_fields, nodes


def _wiring(nodes: dict[int, _Node]) -> tuple[dict[str, int], dict[str, list[int]]]:
    """Which node makes each value, and which nodes read it (a value a node reads twice is listed twice)."""
    made_by = {output: i for i, node in nodes.items() for output in node.outputs}
    users: dict[str, list[int]] = {}
    for i, node in nodes.items():
        for name in node.inputs:
            users.setdefault(name, []).append(i)
    return made_by, users


def _rebuilt(
    top: list[_Field], graph: _Field, graph_fields: list[_Field], dropped: set[int], replaced: dict[int, list[_Node]]
) -> bytes:
    """The model with the graph's nodes at `dropped` left out and each node at `replaced` swapped for the nodes
    given, in its place (so after its inputs exist and before any use of its outputs)."""
    graph_out: list[bytes | memoryview] = []
    for i, f in enumerate(graph_fields):
        if i in replaced:
            graph_out += [_length_field(GRAPH_NODE, node.encode()) for node in replaced[i]]
        elif i not in dropped:
            graph_out.append(f.raw)
    # One copy of the model at the end: the graph's parts go into the model's join, behind their own header.
    graph_header = _encode_varint(MODEL_GRAPH << 3 | LENGTH) + _encode_varint(sum(len(part) for part in graph_out))
    out: list[bytes | memoryview] = []
    for f in top:
        out += [graph_header, *graph_out] if f is graph else [f.raw]
    return b"".join(out)


MODEL_OPSET_IMPORT = 8
NODE_DOMAIN = 7
OPSET_DOMAIN, OPSET_VERSION = 1, 2
MICROSOFT = "com.microsoft"


def integer_matmuls(model: bytes) -> bytes:
    """The model with every `MatMul(x, Mul(Cast(w_q), w_scale))` rewritten as ONNX Runtime's
    `DynamicQuantizeMatMul(x, w_q, w_scale)`: the weights stay int8 and the activations are quantized to uint8 per
    matrix product, so the product runs on the CPU's integer units (VNNI, AMX).

    Unlike `gather_before_dequantize` this changes the output: quantizing the activations costs some precision
    (cosine to the float model's vectors 0.98-0.99 on code symbols), for about half the CPU seconds per text.
    `w_scale` must be one scale per output column ([1, columns]), which ONNX Runtime checks as it loads the
    model. Raises ValueError if no matrix product has this shape of nodes.
    """
    top, graph, graph_fields, nodes = _graph(model)
    made_by, users = _wiring(nodes)
    dropped: set[int] = set()
    replaced: dict[int, list[_Node]] = {}
    domain = _length_field(NODE_DOMAIN, MICROSOFT.encode())
    for i, node in nodes.items():
        if node.op_type != "MatMul" or len(node.inputs) != 2:
            continue
        mul = made_by.get(node.inputs[1])
        if mul is None or nodes[mul].op_type != "Mul" or len(users[node.inputs[1]]) != 1:
            continue
        cast = made_by.get(nodes[mul].inputs[0])
        if cast is None or nodes[cast].op_type != "Cast" or len(users[nodes[cast].outputs[0]]) != 1:
            continue
        weights, scale = nodes[cast].inputs[0], nodes[mul].inputs[1]
        if not (weights.endswith("_q") and scale.endswith("_scale")):
            continue
        replaced[i] = [_Node([node.inputs[0], weights, scale], node.outputs, node.name, "DynamicQuantizeMatMul", [domain])]
        dropped |= {mul, cast}
    if not replaced:
        raise ValueError("the model has no MatMul of int8 weights dequantized by a Cast and a Mul")
    edited = _rebuilt(top, graph, graph_fields, dropped, replaced)  # each new node where its MatMul was
    imported = {
        bytes(g.payload).decode()
        for f in top
        if f.number == MODEL_OPSET_IMPORT and f.payload is not None
        for g in _fields(f.payload)
        if g.number == OPSET_DOMAIN and g.payload is not None
    }
    if MICROSOFT in imported:
        return edited
    opset = _length_field(OPSET_DOMAIN, MICROSOFT.encode()) + _encode_varint(OPSET_VERSION << 3 | VARINT) + _encode_varint(1)
    return edited + _length_field(MODEL_OPSET_IMPORT, opset)


def biases_in_products(model: bytes) -> bytes:
    """The model with each `Add(DynamicQuantizeMatMul(x, w_q, w_scale), bias)` (bias a constant of the graph, the
    product used by that Add alone) rewritten as `DynamicQuantizeMatMul(x, w_q, w_scale, "", bias)`: the bias is
    added as the product's integers are scaled back to float, instead of in one more pass over the activations.

    Once the layer norms are left unfused from their residual sums (`embedding.INTEGER_UNFUSED`), the output is bit
    for bit the same (checked on the bundled model; with SkipLayerNormalization, whose own bias input ONNX Runtime
    would otherwise fill, it is not). Raises ValueError if no product has such an Add.
    """
    top, graph, graph_fields, nodes = _graph(model)
    made_by, users = _wiring(nodes)
    constants = {_name(f) for f in graph_fields if f.number == GRAPH_INITIALIZER}
    dropped: set[int] = set()
    replaced: dict[int, list[_Node]] = {}
    for i, node in nodes.items():
        if node.op_type != "Add" or len(node.inputs) != 2:
            continue
        for value, bias in ((node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])):
            product = made_by.get(value)
            if product is None or bias not in constants or len(users[value]) != 1:
                continue
            source = nodes[product]
            if source.op_type != "DynamicQuantizeMatMul" or len(source.inputs) != 3:
                continue
            replaced[product] = [_Node([*source.inputs, "", bias], node.outputs, source.name, source.op_type, source.rest)]
            dropped.add(i)
            break
    if not replaced:
        raise ValueError("the model has no DynamicQuantizeMatMul followed by the Add of a constant bias")
    return _rebuilt(top, graph, graph_fields, dropped, replaced)


def without_attention_mask(model: bytes, mask_input: str = "attention_mask") -> bytes:
    """The model with each `Add(scores, mask)` before an attention `Softmax` left out, where the scores are a
    MatMul's and `mask` is computed from the graph input `mask_input`: the softmax reads the scores alone, and the
    nodes that made the mask go unused (ONNX Runtime drops them as it loads the model).

    Only for a session that runs one text at a time, unpadded: its mask then adds 0 to every score, so the output is
    bit for bit the same. A padded batch would attend to its padding. Raises ValueError if no softmax reads such
    a sum.
    """
    top, graph, graph_fields, nodes = _graph(model)
    made_by, _ = _wiring(nodes)

    @functools.cache
    def from_mask(value: str) -> bool:
        if value == mask_input:
            return True
        maker = made_by.get(value)
        return maker is not None and any(from_mask(name) for name in nodes[maker].inputs if name)

    def product(value: str) -> bool:
        return value in made_by and nodes[made_by[value]].op_type == "MatMul"

    dropped: set[int] = set()
    replaced: dict[int, list[_Node]] = {}
    for i, node in nodes.items():
        total = made_by.get(node.inputs[0]) if node.op_type == "Softmax" and node.inputs else None
        if total is None or nodes[total].op_type != "Add" or len(nodes[total].inputs) != 2:
            continue
        scores, mask = nodes[total].inputs
        if product(mask):
            scores, mask = mask, scores
        if product(scores) and from_mask(mask):
            replaced[i] = [_Node([scores], node.outputs, node.name, node.op_type, node.rest)]
            dropped.add(total)
    if not replaced:
        raise ValueError(f"the model has no Softmax of scores plus a mask made from {mask_input}")
    return _rebuilt(top, graph, graph_fields, dropped, replaced)


def without_nan_guards(model: bytes) -> bytes:
    """The model with each `Where(IsNaN(p), zero, p)` after a `Softmax` (p) left out: the attention then uses p.

    The exporter guards softmax against a row whose every key is masked, which gives NaN. The bundled model
    masks keys only (the attention mask of each text, broadcast over the query positions), and no text masks
    its first token ([CLS]), so no row is all masked and p never holds NaN: the guard copies p, at about a
    tenth of the model's CPU time (two passes over every batch x 12 heads x tokens x tokens). The vectors do
    not change by a single bit. Raises ValueError if the graph has no such guard.
    """
    top, graph, graph_fields, nodes = _graph(model)
    made_by, users = _wiring(nodes)
    dropped: set[int] = set()
    replaced: dict[int, list[_Node]] = {}
    for i, node in nodes.items():
        if node.op_type != "IsNaN":
            continue
        softmax = made_by.get(node.inputs[0])
        if softmax is None or nodes[softmax].op_type != "Softmax":
            continue
        probabilities = node.inputs[0]
        guards = [u for u in users[node.outputs[0]] if nodes[u].op_type == "Where" and nodes[u].inputs[2] == probabilities]
        if len(guards) != 1 or len(users[node.outputs[0]]) != 1 or sorted(users[probabilities]) != sorted([i, guards[0]]):
            continue
        where = nodes[guards[0]]
        source = nodes[softmax]
        replaced[softmax] = [_Node(source.inputs, where.outputs, source.name, source.op_type, source.rest)]
        dropped |= {i, guards[0]}
    if not replaced:
        raise ValueError("the model has no Where(IsNaN(p), 0, p) after a Softmax")
    return _rebuilt(top, graph, graph_fields, dropped, replaced)


GRAPH_INITIALIZER = 5
TENSOR_NAME, TENSOR_FLOAT_DATA, TENSOR_RAW_DATA = 8, 4, 9


def _name(initializer: _Field) -> str | None:
    names = [bytes(p.payload).decode() for p in _fields(initializer.payload or memoryview(b"")) if p.number == TENSOR_NAME]
    return names[0] if len(names) == 1 else None


def _scalars(graph_fields: list[_Field]) -> dict[str, float]:
    """The graph's one-value float initializers by name (the constants of an exported GELU)."""
    out = {}
    for f in graph_fields:
        if f.number != GRAPH_INITIALIZER or f.payload is None:
            continue
        parts = _fields(f.payload)
        names = [bytes(p.payload).decode() for p in parts if p.number == TENSOR_NAME and p.payload is not None]
        raw = [bytes(p.payload) for p in parts if p.number == TENSOR_RAW_DATA and p.payload is not None]
        floats = [
            bytes(p.raw[1:]) if p.wire == FIXED32 else bytes(p.payload or b"") for p in parts if p.number == TENSOR_FLOAT_DATA
        ]
        data = raw[0] if raw else b"".join(floats)
        if len(names) == 1 and len(data) == 4:
            out[names[0]] = struct.unpack("<f", data)[0]
    return out


def fused_gelus(model: bytes) -> bytes:
    """The model with each GELU spelled out as `x * (0.5 * (erf(x / sqrt 2) + 1))` replaced by ONNX Runtime's
    `Gelu(x)`: one pass over the activations instead of five, and ONNX Runtime then folds the bias before it in
    too. Its erf is a close approximation, so the output changes in the last bits (the code index's session
    only). Raises ValueError if the graph has no such GELU."""
    top, graph, graph_fields, nodes = _graph(model)
    constants = _scalars(graph_fields)
    made_by, users = _wiring(nodes)

    def step(name: str, op_type: str, constant: float | None) -> tuple[int, str] | None:
        """The node making `name` if it is `op_type` of one value and `constant` (None: of the value alone), used
        once: (node, the value)."""
        i = made_by.get(name)
        if i is None or nodes[i].op_type != op_type or len(users[name]) != 1:
            return None
        inputs = nodes[i].inputs
        if constant is None:
            return (i, inputs[0]) if len(inputs) == 1 else None
        for value, other in ((inputs[0], inputs[1]), (inputs[1], inputs[0])) if len(inputs) == 2 else ():
            if other in constants and abs(constants[other] - constant) < 1e-6 and not (op_type == "Div" and other == inputs[0]):
                return i, value
        return None

    dropped: set[int] = set()
    replaced: dict[int, list[_Node]] = {}
    domain = _length_field(NODE_DOMAIN, MICROSOFT.encode())
    for i, node in nodes.items():
        if node.op_type != "Mul" or len(node.inputs) != 2:
            continue
        for x, rest in ((node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])):
            half = step(rest, "Mul", 0.5)
            plus_one = half and step(half[1], "Add", 1.0)
            erf = plus_one and step(plus_one[1], "Erf", None)
            scaled = erf and step(erf[1], "Div", math.sqrt(2))
            if half and plus_one and erf and scaled and scaled[1] == x:
                replaced[i] = [_Node([x], node.outputs, node.name, "Gelu", [domain])]
                dropped |= {half[0], plus_one[0], erf[0], scaled[0]}
                break
    if not replaced:
        raise ValueError("the model has no GELU spelled out with Erf")
    still_used = {name for i, node in nodes.items() if i not in dropped for name in node.inputs}
    unused = {
        i for i, f in enumerate(graph_fields) if f.number == GRAPH_INITIALIZER and _name(f) in constants.keys() - still_used
    }
    return _rebuilt(top, graph, graph_fields, dropped | unused, replaced)  # ONNX Runtime warns of unused constants


TENSOR_DIMS, TENSOR_DATA_TYPE = 1, 2


def initializer(model: bytes, name: str) -> tuple[list[int], int, memoryview]:
    """An initializer's shape, ONNX data type and raw bytes (a view into `model`). Raises ValueError if the graph
    has no initializer of that name stored as raw bytes."""
    _, _, graph_fields, _ = _graph(model)
    for f in graph_fields:
        if f.number != GRAPH_INITIALIZER or f.payload is None or _name(f) != name:
            continue
        dims: list[int] = []
        data_type, raw = 0, None
        for p in _fields(f.payload):
            if p.number == TENSOR_DIMS and p.wire == VARINT:
                dims.append(_varint(memoryview(bytes(p.raw)), 1)[0])
            elif p.number == TENSOR_DIMS and p.payload is not None:  # packed
                pos = 0
                while pos < len(p.payload):
                    value, pos = _varint(p.payload, pos)
                    dims.append(value)
            elif p.number == TENSOR_DATA_TYPE:
                data_type = _varint(memoryview(bytes(p.raw)), 1)[0]
            elif p.number == TENSOR_RAW_DATA:
                raw = p.payload
        if raw is not None:
            return dims, data_type, raw
    raise ValueError(f"the model has no initializer {name} stored as raw bytes")
