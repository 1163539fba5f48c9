"""Does a new memory only restate part of `project_context.md`?

Peers' users complain about junk memories that repeat the project's own docs:
they cost tokens twice and drift from the file. A memory restates a block of
the file (a paragraph or list item) when its specifics (numbers, identifiers,
negations) all appear in that block and most of its content words do too
(the share is calibrated in `benchmarks/retrieval.py`). The check is lexical
on purpose: it runs while `remember` answers, where the model has no place.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from project_ledger.memory.project_context import Block, ProjectContextFile, blocks
from project_ledger.text.text_signals import content_words, specifics

MIN_CONTENT_WORDS = 3


@dataclass(frozen=True)
class Restatement:
    section: str
    block: str
    overlap: float  # the share of the memory's content words found in the block


@dataclass(frozen=True)
class _Prepared:
    text: str
    blocks: list[Block]
    words: list[frozenset[str]]
    specifics: list[frozenset[str]]


class RestatementCheck:
    def __init__(self, context: ProjectContextFile, threshold: float) -> None:
        self.context = context
        self.threshold = threshold
        self._prepared: _Prepared | None = None
        self._lock = threading.Lock()

    def _prepare(self) -> _Prepared | None:
        """The file's blocks and their words, recomputed when the file changes."""
        text = self.context.read()
        if not text:
            return None
        with self._lock:
            if self._prepared is None or self._prepared.text != text:
                found = [b for b in blocks(text) if not b.text.lstrip().startswith("#")]
                self._prepared = _Prepared(text, found, [content_words(b.text) for b in found], [specifics(b.text) for b in found])
            return self._prepared

    def check(self, text: str) -> Restatement | None:
        """The block `text` restates most closely, if any."""
        prepared = self._prepare()
        words, own = content_words(text), specifics(text)
        if prepared is None or len(words) < MIN_CONTENT_WORDS:
            return None
        best: Restatement | None = None
        for block, block_words, block_specifics in zip(prepared.blocks, prepared.words, prepared.specifics, strict=True):
            overlap = len(words & block_words) / len(words)
            if own <= block_specifics and overlap >= self.threshold and (best is None or overlap > best.overlap):
                best = Restatement(block.section or "(top of file)", block.text, round(overlap, 4))
        return best
