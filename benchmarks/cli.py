"""Latency of CLI commands, process start included, as a user (or a script) pays it on each call.

    python benchmarks/cli.py                      # 1k memories, 7 runs of each command
    python benchmarks/cli.py --size 10000 --runs 9
    python benchmarks/cli.py --write              # also updates the README's table

Each run is `python -m project_ledger <command> --root <project>`, timed from spawn to exit: wall time, and the
CPU time of the process (user + system), which a loaded machine disturbs less. The ledger is the synthetic journal
of `performance.py` (stored vectors, so a catching-up index reads them) in a project with a small source tree,
indexed once. Each command's index slot is built before timing. For scale: starting Python, and importing the CLI.
Then `recall` and `remember` are timed again with the project's `serve` up (it answers both over its local socket,
its model loaded and its index open).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
from hooks import serving
from performance import synthetic_journal

SOURCE = '''"""Invoices."""


def export_invoices(month: str) -> int:
    """Send the month's invoices; returns how many were sent."""
    return len(month)


class Exporter:
    def run(self) -> None:
        export_invoices("2026-12")
'''


def timed(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds of one process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300, check=False, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise SystemExit(f"{argv} failed: {completed.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), completed.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1000, help="memories in the ledger")
    parser.add_argument("--runs", type=int, default=7, help="runs of each command")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()

    ledger = [sys.executable, "-m", "project_ledger"]
    load_before = common.load()
    with tempfile.TemporaryDirectory() as tmp:
        root = synthetic_journal(Path(tmp), args.size)
        (root / "billing.py").write_text(SOURCE)
        where = ["--root", str(root)]
        timed([*ledger, "index", *where], root)
        memory_id = json.loads(timed([*ledger, "remember", "Invoices go out on the first", "--json", *where], root)[2])["id"]
        timed([*ledger, "recall", "warm up", *where], root)  # the model's files unpacked, the index slot caught up
        commands: dict[str, list[str]] = {
            "`remember` (near-duplicate check on BM25, index caught up)": ["remember", "Export run {n} retried twice", *where],
            "`status`": ["status", *where],
            "`history`": ["history", memory_id, *where],
            "`pin`": ["pin", memory_id, *where],
            "`symbols` (code index brought up to date first)": ["symbols", "export_invoices", *where],
            "`recall`, no server (model loaded, hybrid search)": ["recall", "how are invoices exported", "-k", "3", *where],
        }
        scale = {
            "for scale: `python -c pass`": [sys.executable, "-c", "pass"],
            "for scale: importing the CLI": [sys.executable, "-c", "import project_ledger.cli.commands"],
        }
        served = "`recall` with `serve` up (answered by the server, its model loaded)"
        served_remember = "`remember` with `serve` up (answered by the server once committed)"
        walls: dict[str, list[float]] = {name: [] for name in [*commands, served, served_remember, *scale]}
        cpus: dict[str, list[float]] = {name: [] for name in walls}
        for n in range(args.runs):  # interleaved, so that a burst of load falls on every command alike
            for name, argv in [*((k, [*ledger, *(a.format(n=n) for a in v)]) for k, v in commands.items()), *scale.items()]:
                wall, cpu, _ = timed(argv, root)
                walls[name].append(wall)
                cpus[name].append(cpu)
        with serving(root):
            from project_ledger.cli.fast_path import recall_from_server

            if recall_from_server((root / ".ledger").resolve(), {"query": "warm up"}) is None:
                raise SystemExit("the running serve did not answer a recall")
            for n in range(args.runs):
                wall, cpu, _ = timed([*ledger, *commands["`recall`, no server (model loaded, hybrid search)"]], root)
                walls[served].append(wall)
                cpus[served].append(cpu)
                wall, cpu, _ = timed([*ledger, "remember", f"Served export run {n} retried twice", *where], root)
                walls[served_remember].append(wall)
                cpus[served_remember].append(cpu)
    load_after = common.load()

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.0f} ms"

    table = "\n".join(
        [
            "| CLI call, process start included | median wall | median CPU |",
            "|---|---|---|",
            *(f"| {name} | {ms(walls[name])} | {ms(cpus[name])} |" for name in walls),
            "",
            f"{args.size:,} memories, {args.runs} runs of each.",
        ]
    )
    common.publish("cli", table, args.write, command="python benchmarks/cli.py", loads=[load_before, load_after])


if __name__ == "__main__":
    main()
