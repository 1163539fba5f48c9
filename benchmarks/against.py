"""This checkout against an earlier commit in one run: the base's code in a temporary git worktree, and the
table the `*_against.py` benchmarks print (a figure of each, and their ratio)."""

from __future__ import annotations

import statistics
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import common

Run = TypeVar("Run")


def git(*args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=check, cwd=common.HERE).stdout.strip()


@contextmanager
def base_sources(base: str) -> Iterator[Path]:
    """The `src` folder of `base`, checked out for as long as the block runs."""
    with tempfile.TemporaryDirectory() as tmp:
        checkout = Path(tmp) / "base"
        git("worktree", "add", "--detach", str(checkout), base)
        try:
            yield checkout / "src"
        finally:
            git("worktree", "remove", "--force", str(checkout), check=False)


def table(what: str, runs: dict[str, list[Any]], figures: list[tuple[str, Any]], decimals: int, how: str) -> str:
    """`runs` holds the base's runs, then this checkout's, by commit; each of `figures` is a row's label and what
    picks a figure in seconds out of a run (a key or an index), shown as the median in milliseconds."""
    (base, base_runs), (head, head_runs) = runs.items()

    def median(of: list[Any], pick: Any) -> float:
        return statistics.median(run[pick] for run in of) * 1000

    lines = [f"| {what} | {base} | {head} (this checkout) | ratio |", "|---|---|---|---|"]
    for label, pick in figures:
        before, after = median(base_runs, pick), median(head_runs, pick)
        lines.append(f"| {label} | {before:.{decimals}f} ms | {after:.{decimals}f} ms | {after / before:.2f} |")
    return "\n".join([*lines, "", how])


def interleaved(names: Sequence[str], rounds: int, measure: Callable[[str], Run], loads: list[float]) -> dict[str, list[Run]]:
    """`rounds` runs of each version in `names`, one of each in turn, so that the machine's load falls on all alike;
    the load average is appended to `loads` after each run."""
    runs: dict[str, list[Run]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            runs[name].append(measure(name))
            loads.append(common.load())
    return runs
