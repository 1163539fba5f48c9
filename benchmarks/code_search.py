"""Code search quality: docstring-to-symbol MRR@10 through `search_code`, on trees whose docstrings are held out.

    python benchmarks/code_search.py            # rich, click, zod and httpx, about 6 minutes (the first time: indexing and embedding)
    python benchmarks/code_search.py --write    # also updates the README's code-search section
    python benchmarks/code_search.py --tune     # also sweeps code search's fusion, 2-fold cross-validated (9 minutes at load 10)

Each Python tree (the rich, click and httpx sdists) is copied with every docstring replaced by `pass` and blank lines
(line numbers kept); the TypeScript tree (zod's `src/`, from npm) with every JSDoc comment that precedes a
definition blanked out. Each is then indexed and embedded (`project-ledger index --embed`). The questions are
the first paragraphs of those docstrings or comments, on functions, methods, classes and (TypeScript) the other
declarations outside tests (at least 20 characters, `@tags` left out); each one's answer is the symbol that
carried it. A docstring often names other symbols ("Like `Console.print`, but ..."): the score shows what
putting them first costs on questions that are not about them. Each tree is also scored without that step
("ranked only"), and on each candidate list alone, for the comparison; as before the query model
(`code_model.QUERY_MODEL`) shipped: the code model reading the questions too; and as before the code model
(`search/code_model.py`, trained by `training/`) shipped: the bundled model's vectors (kept in the same data dir
under their own identity) with the fusion chosen for them (BUNDLED_FUSION). Last, the median time to a question's
vector (the bundled model, the query model) and the symbol texts embedded per CPU second (the bundled model, the
code model).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import itertools
import re
import shutil
import sqlite3
import statistics
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import common
from code_index import EXECUTABLE, RICH, child_env, log, sdist
from project_ledger.search.tuning import CODE_FUSION, FusionParams

CLICK = "click==8.*"
HTTPX = "httpx==0.28.*"  # not looked at while the symbols' text was chosen (on rich): a check on a fresh tree
ZOD = "zod@4"
MIN_QUESTION_CHARS = 20
KINDS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
JSDOC = re.compile(r"/\*\*(?!/)(.*?)\*/", re.DOTALL)
TS_TESTS = re.compile(r"(^|/)(tests?|__tests__)/|\.(test|spec)\.ts$")
# Code search's fusion before the code model (chosen with the bundled model's vectors): the "before" column's.
BUNDLED_FUSION = FusionParams(k=2, dense_weight=1.0, sparse_weight=0.3, candidates=20, by_score=True)
# The sweep of `--tune`: scores blended, BM25's weight (the cosine's is 1), candidates per list; and reciprocal-rank
# fusion, k and the dense list's weight (BM25's is 1), 20 per list.
GRID = [
    *(
        FusionParams(k=2, dense_weight=1.0, sparse_weight=weight, candidates=n, by_score=True)
        for weight, n in itertools.product((0.05, 0.1, 0.2, 0.3, 0.4, 0.5), (20, 50))
    ),
    *(FusionParams(k=k, dense_weight=weight, candidates=20) for k, weight in itertools.product((2, 10), (1.0, 1.5))),
]


@dataclass(frozen=True)
class Question:
    path: str
    text: str
    line: int  # the definition's first line
    name: str | None  # the symbol's name; None: the symbol that starts on `line`


@dataclass(frozen=True)
class HeldOut:
    label: str  # e.g. "rich 14.3.4"
    language: str
    root: Path
    data_dir: Path
    questions: list[Question]


def held_out_python(source: Path, target: Path) -> list[Question]:
    """Copy the Python files of `source` to `target` without docstrings; the questions."""
    questions = []
    shutil.rmtree(target, ignore_errors=True)
    for path in sorted(source.rglob("*.py")):
        rel = path.relative_to(source).as_posix()
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, (*KINDS, ast.Module)) or not node.body:
                continue
            first = node.body[0]
            if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)):
                continue
            if isinstance(node, KINDS) and first.lineno == node.lineno:
                continue  # a one-line definition: leave it
            indent = lines[first.lineno - 1][: first.col_offset]
            end = first.end_lineno or first.lineno
            lines[first.lineno - 1 : end] = [f"{indent}pass", *([""] * (end - first.lineno))]
            question = first.value.value.strip().split("\n\n")[0]
            if isinstance(node, KINDS) and len(question) >= MIN_QUESTION_CHARS and "test" not in rel:
                questions.append(Question(rel, " ".join(question.split()), node.lineno, node.name))
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return questions


def jsdoc_question(comment: str) -> str:
    """The first paragraph of a JSDoc comment's text, before any `@tag`."""
    kept = []
    for line in comment.splitlines():
        line = line.strip().lstrip("*").strip()
        if line.startswith("@") or (not line and kept):
            break
        if line:
            kept.append(line)
    return " ".join(" ".join(kept).split())


def held_out_typescript(source: Path, target: Path, suffixes: tuple[str, ...] = (".ts",)) -> list[Question]:
    """Copy the TypeScript files of `source` (or those with other `suffixes`: JavaScript reads the same way) to
    `target` with every JSDoc comment before a definition blanked (line numbers kept); the questions, answered by
    the symbol that starts on the definition's line."""
    questions = []
    shutil.rmtree(target, ignore_errors=True)
    for path in sorted(p for p in source.rglob("*") if p.name.endswith(suffixes) and p.is_file()):
        rel = path.relative_to(source).as_posix()
        text = path.read_text(encoding="utf-8")
        kept, last = [], 0
        for match in JSDOC.finditer(text):
            after = text[match.end() :].lstrip()
            if not after or after.startswith(("/*", "//")):
                continue
            line = text.count("\n", 0, len(text) - len(after)) + 1
            question = jsdoc_question(match.group(1))
            if len(question) >= MIN_QUESTION_CHARS and not TS_TESTS.search(rel):
                questions.append(Question(rel, question, line, None))
            kept += [text[last : match.start()], re.sub(r"[^\n]", " ", match.group(0))]
            last = match.end()
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join([*kept, text[last:]]), encoding="utf-8")
    return questions


def npm_source(work: Path, spec: str) -> Path | None:
    """Download (once) and extract (once) an npm package's tarball; its `src/` folder."""
    downloads = work / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    name = spec.split("@")[0]
    tarballs = sorted(downloads.glob(f"{name}-*.tgz"))
    if not tarballs:
        log(f"downloading the {spec} npm package")
        done = subprocess.run(
            ["npm", "pack", spec, "--silent", "--pack-destination", str(downloads)], check=False, capture_output=True, text=True
        )
        tarballs = sorted(downloads.glob(f"{name}-*.tgz"))
        if done.returncode != 0 or not tarballs:
            log(f"could not download {spec}: {done.stderr.strip()[-500:]}")
            return None
    target = work / "src" / tarballs[-1].name.removesuffix(".tgz")
    if not target.is_dir():
        with tarfile.open(tarballs[-1]) as archive:
            archive.extractall(target, filter="data")
    return target / "package" / "src"


def prepared(work: Path) -> Iterator[HeldOut]:
    """Each tree held out, indexed and embedded (once), with the questions whose answer the index holds."""
    trees = [
        ("python", sdist(work, RICH), held_out_python),
        ("python", sdist(work, CLICK), held_out_python),
        ("typescript", npm_source(work, ZOD), held_out_typescript),
        ("python", sdist(work, HTTPX), held_out_python),
    ]
    for language, source, hold_out in trees:
        if source is None:
            continue
        name = source.name if source.name != "src" else source.parent.parent.name
        root, data_dir = work / "held-out" / name, work / "held-out-data" / name
        questions = hold_out(source, root)
        indexed_once(root, data_dir)
        yield HeldOut(name.replace("-", " ", 1), language, root, data_dir, answerable(data_dir, questions))


def indexed_once(root: Path, data_dir: Path) -> None:
    """Index and embed `root` into `data_dir` (`project-ledger index --embed`), unless an earlier run did."""
    if not (data_dir / "journal.sqlite3").exists():
        command = [EXECUTABLE, "index", str(root), "--json", "--embed", "--data-dir", str(data_dir)]
        subprocess.run(command, check=True, capture_output=True, env=child_env(), cwd=root)


def answerable(data_dir: Path, questions: list[Question]) -> list[Question]:
    """The questions whose symbol the index holds (a JSDoc comment can sit on a field no query captures)."""
    db = sqlite3.connect(f"file:{data_dir / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        starts = {(path, line) for path, line in db.execute("SELECT path, start_line FROM code_symbols")}
    finally:
        db.close()
    return [q for q in questions if q.name is not None or (q.path, q.line) in starts]


@contextmanager
def variant(*, ranked_only: bool = False, fusion: FusionParams | None = None) -> Iterator[None]:
    """`search_code` without putting named symbols first, or with other fusion settings, for the comparisons."""
    from project_ledger.code import service
    from project_ledger.code.search import CodeSearch

    named_symbols, shipped = CodeSearch.named_symbols, service.CODE_FUSION
    if ranked_only:
        CodeSearch.named_symbols = lambda self, *args, **kwargs: []  # type: ignore[method-assign]
    service.CODE_FUSION = fusion or shipped
    try:
        yield
    finally:
        CodeSearch.named_symbols, service.CODE_FUSION = named_symbols, shipped  # type: ignore[method-assign]


@contextmanager
def plain_model(trained: bool = False) -> Iterator[None]:
    """The code index on the bundled model's vectors, without the code model (the ranking before it); with
    `trained`, on the code model's, which then reads the questions too (the ranking before the query model)."""
    from project_ledger import factory
    from project_ledger.search.embedding import CodeEmbedder, OnnxEmbedder

    shipped = factory.for_code
    factory.for_code = lambda embedder: (
        CodeEmbedder(embedder, trained=trained, query_model=False) if isinstance(embedder, OnnxEmbedder) else embedder
    )
    try:
        yield
    finally:
        factory.for_code = shipped


@contextmanager
def asking(tree: HeldOut) -> Iterator[Callable[[], list[float]]]:
    """A function that asks every question of `tree` through `search_code` and returns each 1/rank (0: not in
    the top 10), on a ledger opened once."""
    from project_ledger.config import Settings
    from project_ledger.factory import open_ledger

    ledger = open_ledger(Settings(root=tree.root, data_dir=tree.data_dir, watch=False), tree.root)
    try:
        code = ledger.require_code()
        code.search.load_model()
        code.search.open_now()
        code.search.embed_all()  # a journal cached by an earlier version: its symbols' texts may have changed

        def ask() -> list[float]:
            out = []
            for q in tree.questions:
                hits = code.search_code(q.text[:300], 10).results
                found = (
                    i
                    for i, hit in enumerate(hits)
                    if hit.path == q.path
                    and (hit.name == q.name if q.name is not None else hit.start_line == q.line)
                    and hit.start_line <= q.line <= hit.end_line
                )
                rank = next(found, None)
                out.append(0.0 if rank is None else 1 / (rank + 1))
            return out

        yield ask
    finally:
        ledger.close()


def symbols_per_cpu_second(data_dir: Path, count: int = 256) -> tuple[float, float]:
    """Symbol texts embedded per CPU second by the bundled model and by the code model (rounds of EMBED_BATCH, one
    thread, three interleaved runs, medians), on whatever load the machine has."""
    from project_ledger.code.search import EMBED_BATCH
    from project_ledger.code.store import CodeStore
    from project_ledger.search.embedding import CodeEmbedder, OnnxEmbedder

    store = CodeStore(data_dir / "journal.sqlite3")
    texts = [symbol.embed_text() for symbol in store.missing_vectors("no model", count)]  # one per distinct text
    store.close()
    model = OnnxEmbedder(1, data_dir)
    ways = (CodeEmbedder(model, trained=False), CodeEmbedder(model))
    rates: tuple[list[float], list[float]] = ([], [])
    for _ in range(3):
        for way, rate in zip(ways, rates, strict=True):
            way.load()
            started = time.process_time()
            for start in range(0, len(texts), EMBED_BATCH):
                way.embed_documents(texts[start : start + EMBED_BATCH])
            rate.append(len(texts) / (time.process_time() - started))
    return statistics.median(rates[0]), statistics.median(rates[1])


def query_vector_ms(questions: list[str], data_dir: Path) -> tuple[float, float]:
    """Median milliseconds to a `search_code` question's vector by the bundled model and by the query model (one
    thread each), the two interleaved."""
    from project_ledger.search.embedding import CodeEmbedder, OnnxEmbedder

    plain, trained = CodeEmbedder(OnnxEmbedder(1, data_dir), trained=False), CodeEmbedder(OnnxEmbedder(1, data_dir))
    plain.load(), trained.load()
    times: tuple[list[float], list[float]] = ([], [])
    for question in questions:
        for way, spent in zip((plain, trained), times, strict=True):
            started = time.perf_counter()
            way.embed_query(question)
            spent.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def mrr(ranks: list[float], half: int | None = None) -> float:
    """Mean reciprocal rank, of every question or of one half (alternating questions)."""
    return statistics.fmean(ranks if half is None else ranks[half::2])


def tune(results: dict[str, dict[FusionParams, list[float]]]) -> list[str]:
    """2-fold cross-validation of the fusion setting over every tree at once: chosen on one half of each tree's
    questions (best summed MRR among settings that lose no more than 0.01 on any tree), scored on the others."""
    shipped = CODE_FUSION
    lines = ["| chosen on half | setting | " + " | ".join(f"{t}, other half: shipped -> chosen" for t in results) + " |"]
    lines.append("|---" * (2 + len(results)) + "|")
    for half in (0, 1):
        fitting = [s for s in GRID if all(mrr(r[s], half) >= mrr(r[shipped], half) - 0.01 for r in results.values())]
        chosen = max(fitting, key=lambda s: sum(mrr(r[s], half) for r in results.values()))
        cells = [f"{mrr(r[shipped], 1 - half):.3f} -> {mrr(r[chosen], 1 - half):.3f}" for r in results.values()]
        lines.append(f"| {half + 1} | {label(chosen)} | " + " | ".join(cells) + " |")
    return lines


def label(fusion: FusionParams) -> str:
    if fusion.by_score:
        return f"cosine + {fusion.sparse_weight:g} x BM25 over the best, {fusion.candidates} per list"
    return f"ranks, k={fusion.k}, dense weight {fusion.dense_weight:g}, {fusion.candidates} per list"


HEADER = [
    (
        "| tree | language | questions | MRR@10, as shipped | before: the bundled model and its fusion "
        "| questions by the code model (no query model) | ranked only | dense list alone "
        "| dense list alone, no query model | dense list alone, bundled model | BM25 list alone |"
    ),
    "|---|---|---|---|---|---|---|---|---|---|---|",
]


def measured(tree: HeldOut, grid: list[FusionParams]) -> tuple[list[float], dict[FusionParams, list[float]]]:
    """`tree`'s MRR@10 in each of HEADER's columns after the first three, and each setting of `grid` with its
    reciprocal ranks (ranked only)."""
    with plain_model(), asking(tree) as ask:
        with variant(fusion=BUNDLED_FUSION):
            before = mrr(ask())
        with variant(ranked_only=True, fusion=dataclasses.replace(BUNDLED_FUSION, dense_weight=1.0, sparse_weight=0.0)):
            dense_before = mrr(ask())
    with plain_model(trained=True), asking(tree) as ask:
        with variant():
            one_encoder = mrr(ask())
        with variant(ranked_only=True, fusion=dataclasses.replace(CODE_FUSION, dense_weight=1.0, sparse_weight=0.0)):
            dense_one_encoder = mrr(ask())
    sweep: dict[FusionParams, list[float]] = {}
    with asking(tree) as ask:
        with variant():
            shipped = mrr(ask())
        with variant(ranked_only=True):
            ranked = mrr(ask())
        legs = []
        for dense, sparse in ((1.0, 0.0), (0.0, 1.0)):
            alone = dataclasses.replace(CODE_FUSION, dense_weight=dense, sparse_weight=sparse)
            with variant(ranked_only=True, fusion=alone):
                legs.append(mrr(ask()))
        for setting in grid:
            with variant(ranked_only=True, fusion=setting):
                sweep[setting] = ask()
    return [shipped, before, one_encoder, ranked, legs[0], dense_one_encoder, dense_before, legs[1]], sweep


def row(label: str, language: str, questions: int, figures: list[float]) -> str:
    return f"| {label} | {language} | {questions} | " + " | ".join(f"{figure:.3f}" for figure in figures) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=common.WORK)
    parser.add_argument("--write", action="store_true", help="update the README's code-search section")
    parser.add_argument("--tune", action="store_true", help="also sweep code search's fusion settings")
    args = parser.parse_args()
    load_before = common.load()
    rows = list(HEADER)
    sweeps: dict[str, dict[FusionParams, list[float]]] = {}
    trees: list[HeldOut] = []
    for tree in prepared(args.work):
        trees.append(tree)
        figures, sweeps[tree.label] = measured(tree, GRID if args.tune else [])
        rows.append(row(tree.label, tree.language, len(tree.questions), figures))
        log(rows[-1])
    asked = [q.text[:300] for tree in trees for q in tree.questions]
    plain_ms, trained_ms = query_vector_ms(asked, trees[0].data_dir)
    plain_rate, trained_rate = symbols_per_cpu_second(trees[0].data_dir)
    speed = (
        f"Query vector p50 (the {len(asked)} questions, one thread): {plain_ms:.1f} ms with the bundled model, "
        f"{trained_ms:.1f} ms with the query model. Symbol texts embedded per CPU second ({trees[0].label}, 256 texts, one "
        f"thread, medians of 3): {plain_rate:.0f} and {trained_rate:.0f}. Shipped fusion: {label(CODE_FUSION)}."
    )
    table = "\n".join([*rows, "", speed])
    if args.tune:
        table += "\n\nFusion, 2-fold cross-validated (`--tune`; ranked only):\n\n" + "\n".join(tune(sweeps))
    command = f"python benchmarks/code_search.py --write{' --tune' if args.tune else ''}"
    common.publish("code-search", table, args.write, command=command, loads=[load_before, common.load()])


if __name__ == "__main__":
    main()
