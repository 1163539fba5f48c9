"""The floor under a full code index: what tree-sitter alone costs against Universal Ctags on the same files.

    python benchmarks/index_floor.py            # django, Go and Rust trees of code_index.py (about 2 minutes)
    python benchmarks/index_floor.py --write    # also updates the README's index-floor section

For each tree, on exactly the files `project-ledger index` indexes (`source_files.walk`), in this process on one
thread, CPU seconds (medians of `--runs`): every file parsed, then parsed and run through its grammar's tags query as
the index plans it (`symbols.plans`: patterns and captures it has no use for switched off), the matches iterated and
nothing done with them. Against ctags' wall time on the same files in the same run (`code_index.ctags_run`, as its
"ctags on the same files"; ctags runs on one core). Reading the captures, the rows, the store and process start all
come on top of this, so the ratio divided by the cores is the least a full index's wall time can be against ctags'
while tree-sitter parses and the tags queries match through the Python binding.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import common
from code_index import DJANGO, ctags_run, go_tree, rust_tree, sdist, tree_label
from project_ledger.code.languages import Grammars
from project_ledger.code.source_files import IgnoreRules, Skipped, walk
from project_ledger.code.symbols import plans
from project_ledger.config import Settings


def floor(root: Path, runs: int, scratch: Path) -> tuple[int, float, float, float]:
    """(files, parse CPU s, parse and match CPU s, ctags wall s) on the files the index takes from `root`."""
    from tree_sitter import QueryCursor

    grammars = Grammars()
    files = list(walk(root, IgnoreRules(root), Skipped(), Settings.model_fields["code_max_file_bytes"].default))
    sources = [((root / f.path).read_bytes(), grammars.get(f.language)) for f in files]
    for grammar in {id(g): g for _, g in sources}.values():
        plans(grammar)  # as `symbols.extract` does before its first match
    parse, match, ctags = [], [], []
    for _ in range(runs):
        started = time.process_time()
        for source, grammar in sources:
            grammar.parser.parse(source)
        parse.append(time.process_time() - started)
        started = time.process_time()
        for source, grammar in sources:
            for _match in QueryCursor(grammar.query).matches(grammar.parser.parse(source).root_node):
                pass
        match.append(time.process_time() - started)
        ctags.append(ctags_run(root, scratch / f"{root.name}.tags.json", sorted(f.path for f in files))[0])
    return len(files), statistics.median(parse), statistics.median(match), statistics.median(ctags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=common.WORK, help="downloads and trees")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    work = args.work.expanduser().resolve()
    scratch = work / "floor"
    scratch.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    trees = [(tree_label(root), root, "3×") for root in [sdist(work, DJANGO)] if root]
    trees += [(f"Go std ({root.name})", root, "4×") for root in [go_tree(work)] if root]
    trees += [(f"Rust crates ({root.name})", root, "4×") for root in [rust_tree(work)] if root]
    load = common.load()
    lines = [
        (
            f"| tree | files | parse, CPU s | parse + tags query, CPU s | ctags, wall s | parse + query / ctags | "
            f"the same on {cores} cores (least wall-time ratio) | issue's target |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, root, target in trees:
        files, parse, match, ctags = floor(root, args.runs, scratch)
        lines.append(
            f"| {label} | {files:,} | {parse:.2f} | {match:.2f} | {ctags:.2f} | {match / ctags:.1f}× | {match / ctags / cores:.1f}× | "
            f"≤ {target} |"
        )
    lines += ["", f"Medians of {args.runs} runs, one thread."]
    common.publish("index-floor", "\n".join(lines), args.write, command="python benchmarks/index_floor.py", loads=[load, common.load()])


if __name__ == "__main__":
    main()
