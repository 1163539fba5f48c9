"""Does a new memory only restate part of `project_context.md`?

Peers' users complain about junk memories that repeat the project's own docs:
they cost tokens twice and drift from the file. A memory restates a block of
the file (a paragraph or list item) when its specifics (numbers, identifiers,
negations) all appear in that block, and either nearly all its content words
do too or its meaning is very close (cosine similarity over a calibrated
threshold; see `benchmarks/retrieval.py`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from project_ledger.indexers.embedding import Embedder

from .project_context import Block, ProjectContextFile, blocks
from .text_signals import content_words, specifics

if TYPE_CHECKING:
    import numpy as np

WORD_CONTAINMENT = 0.85
MIN_CONTENT_WORDS = 3


@dataclass(frozen=True)
class Restatement:
    section: str
    block: str
    similarity: float


@dataclass(frozen=True)
class _Prepared:
    text: str
    blocks: list[Block]
    words: list[frozenset[str]]
    specifics: list[frozenset[str]]
    vectors: np.ndarray | None  # one unit row per block


def _unit(vectors: np.ndarray) -> np.ndarray:
    import numpy as np  # kept off the import path of `serve`: the handshake does not need it

    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def _stack(vectors: list[np.ndarray]) -> np.ndarray:
    import numpy as np

    return np.stack(vectors)


class RestatementCheck:
    def __init__(self, context: ProjectContextFile, embedder: Embedder, threshold: float) -> None:
        self.context = context
        self.embedder = embedder
        self.threshold = threshold
        self._prepared: _Prepared | None = None
        self._lock = threading.Lock()

    def _prepare(self) -> _Prepared | None:
        text = self.context.read()
        if not text:
            return None
        with self._lock:
            prepared = self._prepared
            ready = self.embedder.state == "ready"
            if prepared is None or prepared.text != text or (prepared.vectors is None and ready):
                found = [b for b in blocks(text) if not b.text.lstrip().startswith("#")]
                vectors = _unit(_stack(self.embedder.embed_documents([b.text for b in found]))) if ready and found else None
                prepared = _Prepared(
                    text, found, [content_words(b.text) for b in found], [specifics(b.text) for b in found], vectors
                )
                self._prepared = prepared
            return prepared

    def check(self, text: str, vector: np.ndarray | None) -> Restatement | None:
        """The block `text` restates, if any. `vector` is its embedding, when the model is ready."""
        prepared = self._prepare()
        if prepared is None or not prepared.blocks:
            return None
        words, own = content_words(text), specifics(text)
        similarities = (
            prepared.vectors @ _unit(vector) if prepared.vectors is not None and vector is not None else None
        )
        best: Restatement | None = None
        for i, block in enumerate(prepared.blocks):
            if not own <= prepared.specifics[i]:
                continue
            similarity = float(similarities[i]) if similarities is not None else 0.0
            contained = len(words) >= MIN_CONTENT_WORDS and len(words & prepared.words[i]) >= WORD_CONTAINMENT * len(words)
            if (contained or similarity >= self.threshold) and (best is None or similarity > best.similarity):
                best = Restatement(block.section or "(top of file)", block.text, round(similarity, 4))
        return best
