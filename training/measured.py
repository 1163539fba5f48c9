"""Code search's measured trees as the benchmark holds them: every symbol text of each tree's index, and the
questions with the symbol that answers each (`benchmarks/code_search.py`'s rule). For scoring heads offline;
the figures that count come from running that benchmark on the shipped model."""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

from code_search import prepared  # noqa: E402

from project_ledger.code.rows import embed_text  # noqa: E402
from project_ledger.code.source_files import is_test_file  # noqa: E402


@dataclass
class Tree:
    label: str
    texts: list[str]  # every symbol's embedded text
    tests: list[bool]  # the symbol is in a test file
    questions: list[str]
    answers: list[set[int]]  # indexes into texts


def trees(work: Path) -> list[Tree]:
    out = []
    for held in prepared(work):
        db = sqlite3.connect(f"file:{held.data_dir / 'journal.sqlite3'}?mode=ro", uri=True)
        rows = db.execute(
            "SELECT path, name, qualname, kind, start_line, end_line, signature, doc, body_head FROM code_symbols ORDER BY id"
        ).fetchall()
        db.close()
        texts = [embed_text(kind, qualname, sig, doc, body, path) for path, _n, qualname, kind, _s, _e, sig, doc, body in rows]
        answers = []
        for q in held.questions:
            answers.append(
                {
                    i for i, (path, name, _q, _k, start, end, *_r) in enumerate(rows)
                    if path == q.path and (name == q.name if q.name is not None else start == q.line) and start <= q.line <= end
                }
            )  # fmt: skip
        out.append(Tree(held.label, texts, [is_test_file(r[0]) for r in rows], [q.text[:300] for q in held.questions], answers))
    return out
