"""Recall latency of this checkout against an earlier commit, in the same run, on the same large journal.

    python benchmarks/recall_against.py --base 0a3006d                 # 100k memories, 4 runs of each, interleaved
    python benchmarks/recall_against.py --base 0a3006d --size 10000 --runs 3
    python benchmarks/recall_against.py --base 0a3006d --write         # also updates the README's table

A ranking change must not slow recall down at scale (issue 16: p95 at 100k within 10%). Figures taken on different
days say little on a shared machine, so both versions are measured here, one run of each in turn: the base commit
is checked out in a temporary git worktree, `performance.py`'s synthetic journal is built once and copied for each
version (each keeps its own index slot), and each run is `performance.in_process_recall` in a fresh process whose
`PYTHONPATH` points at that version's code: 200 recalls after 20 that warm the caches, the query embedding timed
apart.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import common
from against import base_sources, git, interleaved, table
from performance import synthetic_journal

SRC = common.REPO / "src"
# The journal is filled once, its vectors labelled with the model identity of the code that filled it. Each version
# relabels its copy with its own identity first: a version that found none of its own would search without dense
# vectors, and look faster than it is (as 3d6db1b did against memories' new identity: 2-3x apart).
RUN = """
import json, sqlite3, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from performance import in_process_recall
from project_ledger.search.embedding import create_embedder
root = Path(sys.argv[2])
identity = create_embedder(None, None, root / ".ledger" / "model", None).identity
db = sqlite3.connect(root / ".ledger" / "journal.sqlite3")
with db:
    db.execute("UPDATE embeddings SET model = ?", (identity,))
db.close()
print(json.dumps(in_process_recall(root)))
"""


def one_run(src: Path, root: Path) -> dict[str, float]:
    """`in_process_recall` on `root` with the code in `src`, in a process of its own."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(common.HERE), str(root)], env=env, capture_output=True, text=True, timeout=1800, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the run with {src} failed: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. the last landed main)")
    parser.add_argument("--size", type=int, default=100_000, help="memories in the journal")
    parser.add_argument("--runs", type=int, default=4, help="runs of each version")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    base, head = git("rev-parse", "--short", args.base), git("rev-parse", "--short", "HEAD")
    loads = [common.load()]
    with tempfile.TemporaryDirectory() as tmp, base_sources(base) as base_src:
        work = Path(tmp)
        synthetic_journal(work / "journal", args.size)
        roots = {name: work / f"ledger-{name}" for name in (base, head)}
        for root in roots.values():
            shutil.copytree(work / "journal", root)
        sources = {base: base_src, head: SRC}
        runs = interleaved((base, head), args.runs, lambda name: one_run(sources[name], roots[name]), loads)

    figures = [(f"{key}, median of {args.runs} runs", key) for key in ("p50", "p95")]
    what = f"recall at {args.size:,} memories, in-process, no query embedding"
    how = "Runs interleaved, each in a fresh process."
    table_text = table(what, runs, figures, 1, how)
    command = f"python benchmarks/recall_against.py --base {args.base}"
    common.publish("recall-against", table_text, args.write, command=command, loads=loads)


if __name__ == "__main__":
    main()
