"""What the benchmarks share: where their data is, their readings of load and memory, and how a result is published.

A script runs from this folder (`python benchmarks/<script>.py`; Python puts the script's folder first on its path),
so `import common` needs nothing set up; `on_path` is for code elsewhere (the repository's `tests` package, another
checkout of the ledger).

`publish` ends every script: it prints the table with a footer that says when, at which commit, on what machine,
under what load and with which command it was measured, and with `--write` puts the table between its markers in
README.md or docs/*.md (`readme_table.replace_section`) and its figures, with the same facts, into
`results/NAME.json` beside it.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from readme_table import replace_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "data"  # the project's own corpora, in the repository
SHARED_DATA = REPO.parent / "shared" / "data"  # public data sets, kept beside the repository and not in it
LOCOMO_DEV = SHARED_DATA / "locomo-dev.json"
RESULTS = HERE / "results"
WORK = Path.home() / ".cache" / "project-ledger-bench"  # downloads, source trees and data dirs kept between runs


def on_path(folder: Path | str) -> None:
    """Make modules in `folder` importable, ahead of installed ones."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.array(values), q))


def load() -> float:
    """The machine's 1-minute load average: other sessions share this machine."""
    return os.getloadavg()[0]


def status_mb(pid: int | str = "self", field: str = "VmRSS") -> float:
    """A memory field of /proc/PID/status (VmRSS, VmHWM) in MB; 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(proc.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def commit() -> str:
    """The commit measured (`git describe`), `-dirty` when the tree had changes."""
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "an unknown commit"
    return done.stdout.strip()


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def footer(command: str, loads: Sequence[float]) -> str:
    """A table's last sentence: when, at which commit, on what machine, under what load and with which command."""
    if len(loads) > 2:
        load_text = f"{min(loads):.1f}-{max(loads):.1f} over {len(loads)} readings, {loads[0]:.1f} first, {loads[-1]:.1f} last"
    else:
        load_text = f"{loads[0]:.1f} before, {loads[-1]:.1f} after"
    return (
        f"Measured {time.strftime('%Y-%m-%d')} at {commit()} on {machine()} (shared; load average {load_text}), "
        f"with `{command}`."
    )


def save_results(name: str, figures: Mapping[str, Any], *, command: str, loads: Sequence[float]) -> Path:
    """Write `results/NAME.json`: the figures, and when, where and how they were measured. Through a `.tmp` file, so a
    run stopped midway leaves the previous results whole."""
    facts = {"measured": time.strftime("%Y-%m-%d"), "commit": commit(), "machine": machine(), "command": command}
    path = RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.tmp")
    partial.write_text(json.dumps({**facts, "load_average": list(loads), **figures}, indent=2) + "\n")
    os.replace(partial, path)
    return path


def load_results(name: str) -> dict[str, Any]:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        raise SystemExit(f"{path.relative_to(REPO)} is missing: run the benchmark with --write first")
    return json.loads(path.read_text())


def publish(
    name: str,
    body: str,
    write: bool,
    *,
    command: str,
    loads: Sequence[float],
    figures: Mapping[str, Any] | None = None,
) -> None:
    """Print a benchmark's table with its footer; with `write`, put both between the markers of section `name` and
    the figures (the table at least) in `results/NAME.json`. The footer names `command` as it was run."""
    if write and "--write" not in command.split():
        command = f"{command} --write"
    text = f"{body.rstrip()}\n\n{footer(command, loads)}"
    print(text)
    if write:
        save_results(name, {"table": text, **(figures or {})}, command=command, loads=loads)
        replace_section(name, text)
