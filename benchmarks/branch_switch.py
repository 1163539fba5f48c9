"""A branch switch of 5,000 files under a running `serve`: how long until `find_symbol` answers for the new branch.

    python benchmarks/branch_switch.py            # 3 runs of each case (about 10 minutes)
    python benchmarks/branch_switch.py --write    # also updates the README's code-index section

The tree is a git repository of 5,000 Python modules in 50 packages, on two branches: every module of `new` differs
from `old` and defines `new_function_<n>` and `NewThing<n>` where `old` has `old_function_<n>` and `OldThing<n>`.
Each run starts `project-ledger serve` (the official MCP client, over stdio) on `old` with a fresh data directory,
waits until its first scan is over and every symbol has its vector (a server that has been up a while), then runs
`git checkout new` and polls `find_symbol` every 0.1 s, by prefix: the branch has its answer once `new_function_`
finds all 5,000 functions and `old_function_` none.

Two cases:
- **as it comes**: the checkout as a user runs it. Whether the kernel's inotify queue overflows depends on how fast
  the server reads its events; the table says in how many runs it did (watchdog's "Inotify queue overflowed" in the
  server's log), and how many rescans the watcher ran (`status`).
- **events dropped**: the server is stopped (SIGSTOP) while the checkout runs and continued after it, so its inotify
  queue overflows for certain: the time to answer is that of the rescan that recovers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import common
from project_ledger.code.watch_state import WATCH_STATE_NAME, read_watch_state

EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))
FILES = 5_000
PACKAGES = 50
POLL_SECONDS = 0.1
DEADLINE_SECONDS = 300.0
TARGET_SECONDS = 60.0  # the target for a 5,000-file switch
OVERFLOW_LOGGED = "Inotify queue overflowed; filesystem events were lost"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@ledger", *args], check=True, capture_output=True)


def write_branch(root: Path, tag: str) -> None:
    for n in range(FILES):
        folder = root / "pkg" / f"part{n % PACKAGES:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module{n:05d}.py").write_text(
            f'"""Module {n} of the {tag} branch."""\n\n\n'
            f"def {tag}_function_{n}(value: int) -> int:\n    return value * {n}\n\n\n"
            f"class {tag.title()}Thing{n}:\n    def size_{tag}_{n}(self) -> int:\n        return {n}\n"
        )


def make_repository(root: Path) -> None:
    """The two-branch repository (once; later runs reuse it), left on `old`."""
    if (root / ".git").is_dir():
        git(root, "checkout", "-q", "old")
        return
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "old")
    (root / ".gitignore").write_text(".ledger/\n")
    write_branch(root, "old")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "old")
    git(root, "checkout", "-q", "-b", "new")
    shutil.rmtree(root / "pkg")
    write_branch(root, "new")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "new")
    git(root, "checkout", "-q", "old")


@dataclass
class Run:
    answered: float  # seconds from the checkout until find_symbol answers for the new branch
    first: float  # ... until the first new name is found
    overflowed: bool
    rescans: int
    checkout: float  # the checkout's own wall time (to within a poll)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content or {}


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout: float) -> None:
    deadline = time.perf_counter() + timeout
    while not await check():
        if time.perf_counter() > deadline:
            raise SystemExit(f"{what} did not happen within {timeout:.0f} s")
        await asyncio.sleep(0.5)


async def found(session: ClientSession, prefix: str) -> int:
    """How many functions `find_symbol` finds by `prefix` (its `total`)."""
    answer = await call(session, "find_symbol", name=prefix, kind="function", limit=1)
    return answer["total"] if answer["matched_by"] != "none" else 0


async def one_run(root: Path, stop_during_checkout: bool) -> Run:
    make_repository(root)
    data_dir = Path(tempfile.mkdtemp(prefix="ledger-switch-"))
    log_path = data_dir.parent / f"{data_dir.name}.log"
    env = {key: os.environ[key] for key in ("HOME", "PATH") if key in os.environ}
    params = StdioServerParameters(
        command=EXECUTABLE, args=["serve", "--root", str(root), "--data-dir", str(data_dir)], env=env, cwd=str(root)
    )
    try:
        with log_path.open("w") as errors:
            async with stdio_client(params, errlog=errors) as (read, write), ClientSession(read, write) as session:
                await session.initialize()

                async def settled() -> bool:
                    code = (await call(session, "status"))["code"]
                    return code["indexing"] is None and code["last_scan"] is not None and code["watcher"] == "running" and not code["pending_vectors"]

                await until(settled, "the first scan and its embedding", 900)
                assert await found(session, "old_function_") == FILES
                pid = None
                if stop_during_checkout:
                    report = read_watch_state(data_dir / WATCH_STATE_NAME)
                    assert report is not None and report.pid is not None, "no watcher has published its state"
                    pid = report.pid
                    os.kill(pid, signal.SIGSTOP)
                started = time.perf_counter()
                checkout = subprocess.Popen(["git", "-C", str(root), "checkout", "-q", "new"])  # polled while it runs
                checkout_seconds = None
                if pid is not None:
                    checkout.wait()
                    os.kill(pid, signal.SIGCONT)
                first = None
                while True:
                    new = await found(session, "new_function_")
                    elapsed = time.perf_counter() - started
                    if checkout_seconds is None and checkout.poll() is not None:
                        checkout_seconds = elapsed
                    if new and first is None:
                        first = elapsed
                    if new == FILES and not await found(session, "old_function_"):
                        break
                    if elapsed > DEADLINE_SECONDS:
                        raise SystemExit(f"find_symbol found {new} of {FILES} new functions {DEADLINE_SECONDS:.0f} s after the checkout")
                    await asyncio.sleep(POLL_SECONDS)
                watcher = read_watch_state(data_dir / WATCH_STATE_NAME)
                rescans = watcher.rescans if watcher is not None else 0
        assert checkout.wait() == 0, "git checkout failed"
        return Run(elapsed, first or elapsed, OVERFLOW_LOGGED in log_path.read_text(), rescans, checkout_seconds or elapsed)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        log_path.unlink(missing_ok=True)
        git(root, "checkout", "-q", "-f", "old")


def row(case: str, runs: list[Run]) -> str:
    answered = statistics.median(r.answered for r in runs)
    verdict = "✓" if answered <= TARGET_SECONDS else "✗"
    return (
        f"| {case} | {answered:.1f} s {verdict} | {min(r.answered for r in runs):.1f}-{max(r.answered for r in runs):.1f} s | "
        f"{statistics.median(r.first for r in runs):.1f} s | {sum(r.overflowed for r in runs)} of {len(runs)} | "
        f"{sum(r.rescans for r in runs)} | {statistics.median(r.checkout for r in runs):.2f} s |"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each case to take the median of")
    parser.add_argument("--work", type=Path, default=common.WORK, help="where the repository is kept")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    root = args.work / "branch-switch-5000"
    load_before = common.load()
    results: dict[str, list[Run]] = {"as it comes": [], "events dropped (server stopped during the checkout)": []}
    for n in range(args.runs):
        for case, stop in zip(results, (False, True), strict=True):
            run = await one_run(root, stop)
            results[case].append(run)
            common.log(f"{case}, run {n + 1}: answered after {run.answered:.1f} s (first new name {run.first:.1f} s), overflow {run.overflowed}, rescans {run.rescans}")
    load_after = common.load()
    lines = [
        "| case | `find_symbol` answers for the new branch, median | range | first new name | inotify queue overflowed | rescans | `git checkout` |",
        "|---|---|---|---|---|---|---|",
        *(row(case, runs) for case, runs in results.items()),
        "",
        f"{FILES:,} modules changed by the checkout (a function and a class with one method each); `serve` on a fresh data directory, "
        "its first scan over and every symbol embedded before the checkout; polled every 0.1 s until all 5,000 "
        f"`new_function_` are found and no `old_function_`. Target: {TARGET_SECONDS:.0f} s. Medians of {args.runs} runs.",
    ]
    command = "python benchmarks/branch_switch.py"
    common.publish("branch-switch", "\n".join(lines), args.write, command=command, loads=[load_before, load_after])


if __name__ == "__main__":
    asyncio.run(main())
