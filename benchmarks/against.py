"""This checkout against an earlier commit in one run: the base's code in a temporary git worktree, and the
table the `*_against.py` benchmarks print (a figure of each, and their ratio)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent


def git(*args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=check, cwd=HERE).stdout.strip()


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


def table(what: str, base: str, head: str, rows: list[tuple[str, float, float]], decimals: int, how: str, command: str, loads: list[float]) -> str:
    """`rows` are (label, base's figure, this checkout's figure) in milliseconds."""
    lines = [f"| {what} | {base} | {head} (this checkout) | ratio |", "|---|---|---|---|"]
    lines += [f"| {label} | {before:.{decimals}f} ms | {after:.{decimals}f} ms | {after / before:.2f} |" for label, before, after in rows]
    return "\n".join(
        [
            *lines,
            "",
            f"{how} Measured {time.strftime('%Y-%m-%d')}, load average {min(loads):.1f}-{max(loads):.1f}, with `{command}`.",
        ]
    )


def load() -> float:
    return os.getloadavg()[0]
