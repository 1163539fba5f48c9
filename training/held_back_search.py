"""Code search on the packages training holds back: how the code model and its query model rank code they were never
trained on, beside the trees of `benchmarks/code_search.py`.

    python training/held_back_search.py --work W            # W: build_dataset.py's folder; 7 minutes the first time
    python training/held_back_search.py --work W --write    # also updates docs/benchmarks.md
    python training/held_back_search.py --work W --tune     # also code_search.py's fusion grid, on these packages

Every tenth package of `packages.txt` (`split.held_back`) gives no pair to training, but its pairs choose each model's
checkpoint (MRR@10 among its package's symbols, dense vectors alone): its code is unseen by the weights, not by that
choice. Each package's downloaded file (from `build_dataset.py`; nothing is downloaded here) is unpacked and pruned
as the training set reads it, held out as `code_search.py` holds out its trees (every docstring or JSDoc comment
blanked), indexed and embedded with `project-ledger index --embed`, and asked PER_PACKAGE of its questions (a fixed
sample) through `search_code`, with the same columns as `code_search.py`'s table. Needs only the ledger's own
install (no PyTorch).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))  # code_search.py's reading and asking
from build_dataset import ECMA_SUFFIXES, HERE, pruned, read_packages, unpack  # noqa: E402
from split import held_back  # noqa: E402

import common  # noqa: E402
from code_index import log  # noqa: E402
from code_search import (  # noqa: E402
    GRID,
    HEADER,
    HeldOut,
    answerable,
    held_out_python,
    held_out_typescript,
    indexed_once,
    label,
    measured,
    mrr,
    row,
)
from project_ledger.search.tuning import CODE_FUSION, FusionParams  # noqa: E402

PER_PACKAGE = 300  # questions asked of a package, at most: the largest held-back ones hold thousands
SAMPLE_SEED = 7


def prepared(work: Path, target: Path) -> Iterator[HeldOut]:
    """Each held-back package held out, indexed and embedded under `target` (once), with its questions."""
    for package in read_packages(HERE / "packages.txt"):
        if not held_back(package.spec) or package.file is None:
            continue
        slug = package.spec.replace("/", "__")
        archive = work / "downloads" / package.registry / slug / package.file
        if not archive.is_file():
            raise SystemExit(f"{archive} is missing: run `python training/build_dataset.py --work {work}` first")
        root, data_dir = target / "held-out" / slug, target / "held-out-data" / slug
        source = unpack(archive, target / "unpacked" / slug)
        pruned(source, package.language)
        shutil.rmtree(root, ignore_errors=True)
        if package.language == "python":
            questions = held_out_python(source, root)
        else:
            questions = held_out_typescript(source, root, ECMA_SUFFIXES)
        shutil.rmtree(target / "unpacked" / slug)
        indexed_once(root, data_dir)
        asked = answerable(data_dir, questions)
        random.Random(SAMPLE_SEED).shuffle(asked)
        language = "python" if package.language == "python" else "js/ts"
        yield HeldOut(package.spec, language, root, data_dir, asked[:PER_PACKAGE])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="build_dataset.py's folder, with its downloads")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md's held-back section")
    parser.add_argument("--tune", action="store_true", help="also score code_search.py's fusion grid (ranked only)")
    args = parser.parse_args()
    load_before = common.load()
    rows, unanswered, weighted = [*HEADER], [], []
    sweeps: dict[FusionParams, list[float]] = {}  # each setting's reciprocal ranks, every package's questions
    for tree in prepared(args.work, common.WORK / "training-held-back"):
        if not tree.questions:  # e.g. a package whose code is all in `dist/`, which the index skips
            unanswered.append(tree.label)
            continue
        figures, sweep = measured(tree, GRID if args.tune else [])
        for setting, ranks in sweep.items():
            sweeps.setdefault(setting, []).extend(ranks)
        weighted.append((len(tree.questions), figures))
        rows.append(row(tree.label, tree.language, len(tree.questions), figures))
        log(rows[-1])
    total = sum(count for count, _ in weighted)
    pooled = [sum(count * figures[i] for count, figures in weighted) / total for i in range(len(weighted[0][1]))]
    rows.append(row("**all, by question**", "", total, pooled))
    note = f"At most {PER_PACKAGE} questions a package, a fixed sample."
    if unanswered:
        note += f" No row for {', '.join(unanswered)}: the index holds none of the symbols its questions ask for."
    table = [*rows, "", note]
    if args.tune:  # the settings code_search.py --tune chooses among, on packages the choice never saw
        table += ["", "| fusion setting (ranked only) | MRR@10, all questions |", "|---|---|"]
        table += [f"| {label(s)}{' (shipped)' if s == CODE_FUSION else ''} | {mrr(ranks):.3f} |" for s, ranks in sweeps.items()]
    command = f"python training/held_back_search.py --work W{' --tune' if args.tune else ''}"
    common.publish("code-search-held-back", "\n".join(table), args.write, command=command, loads=[load_before, common.load()])


if __name__ == "__main__":
    main()
