"""Code search quality: docstring-to-symbol MRR@10 through `search_code`, on trees whose docstrings are held out.

    python benchmarks/code_search.py            # rich and click, about 3 minutes (the first time: indexing and embedding)
    python benchmarks/code_search.py --write    # also updates the README's code-search section

Each Python tree (the rich and click sdists) is copied with every docstring replaced by `pass` and blank lines
(line numbers kept), then indexed and embedded (`project-ledger index --embed`). The questions are the first
paragraphs of the original docstrings of functions, methods and classes outside tests (at least 20
characters); each one's answer is the symbol that carried it. A docstring often names other symbols
("Like `Console.print`, but ..."): the score shows what putting them first costs on questions that are not
about them. Each tree is also scored without that step ("ranked only"), for the comparison.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import statistics
import subprocess
from pathlib import Path

from code_index import EXECUTABLE, RICH, child_env, log, sdist
from readme_table import replace_section

CLICK = "click==8.*"
MIN_QUESTION_CHARS = 20
KINDS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def held_out(source: Path, target: Path) -> list[tuple[str, str, int, str]]:
    """Copy the Python files of `source` to `target` without docstrings; the questions as (path, text, line, name)."""
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
                questions.append((rel, " ".join(question.split()), node.lineno, node.name))
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return questions


def score(root: Path, data_dir: Path, questions: list[tuple[str, str, int, str]], ranked_only: bool) -> float:
    from project_ledger.code.search import CodeSearch
    from project_ledger.config import Settings
    from project_ledger.factory import open_ledger

    named_symbols = CodeSearch.named_symbols
    if ranked_only:
        CodeSearch.named_symbols = lambda self, *args, **kwargs: []  # type: ignore[method-assign]
    ledger = open_ledger(Settings(root=root, data_dir=data_dir, watch=False), root)
    try:
        code = ledger.require_code()
        code.search.load_model()
        code.search.open_now()
        reciprocal = []
        for path, question, line, name in questions:
            hits = code.search_code(question[:300], 10).results
            found = (i for i, hit in enumerate(hits) if hit.path == path and hit.name == name and hit.start_line <= line <= hit.end_line)
            rank = next(found, None)
            reciprocal.append(0.0 if rank is None else 1 / (rank + 1))
    finally:
        ledger.close()
        CodeSearch.named_symbols = named_symbols  # type: ignore[method-assign]
    return statistics.fmean(reciprocal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "project-ledger-bench")
    parser.add_argument("--write", action="store_true", help="update the README's code-search section")
    args = parser.parse_args()
    rows = ["| tree | questions | MRR@10, as shipped | MRR@10, ranked only |", "|---|---|---|---|"]
    for requirement in (RICH, CLICK):
        source = sdist(args.work, requirement)
        if source is None:
            log(f"{requirement} skipped (download failed)")
            continue
        root = args.work / "held-out" / source.name
        data_dir = args.work / "held-out-data" / source.name
        questions = held_out(source, root)
        if not (data_dir / "journal.sqlite3").exists():
            command = [EXECUTABLE, "index", str(root), "--json", "--embed", "--data-dir", str(data_dir)]
            subprocess.run(command, check=True, capture_output=True, env=child_env(), cwd=root)
        shipped, ranked = (score(root, data_dir, questions, ranked_only) for ranked_only in (False, True))
        rows.append(f"| {source.name.replace('-', ' ', 1)} | {len(questions)} | {shipped:.3f} | {ranked:.3f} |")
        log(rows[-1])
    table = "\n".join([*rows, "", "`python benchmarks/code_search.py --write`."])
    print(table)
    if args.write:
        replace_section("code-search", table)


if __name__ == "__main__":
    main()
