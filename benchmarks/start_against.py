"""Start-up of `serve` over stdio for this checkout against an earlier commit, in the same run.

    python benchmarks/start_against.py --base 3d6db1b              # 9 cold starts of each, interleaved
    python benchmarks/start_against.py --base 3d6db1b --write      # also updates the README's table

Spawn to the `initialize` answer, and to the first `recall` answered, through the official MCP client (which sends
`notifications/initialized` at once, as Claude Code does). On a shared machine a start takes twice as long at load 8
as at load 1, so figures from different days say little: both versions run here, one cold start of each in turn,
each in a fresh data directory, the base commit checked out in a temporary git worktree and served through
`PYTHONPATH`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import common
from against import base_sources, git, interleaved, table

SRC = common.REPO / "src"


async def cold_start(src: Path) -> tuple[float, float]:
    """Seconds from spawn to the `initialize` answer and to the first `recall` answer, with the code in `src`."""
    with tempfile.TemporaryDirectory() as root:
        env = {"HOME": os.environ.get("HOME", "/"), "PYTHONPATH": str(src)}
        params = StdioServerParameters(command=sys.executable, args=["-m", "project_ledger", "serve", "--root", root], env=env)
        started = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            initialized = time.perf_counter() - started
            result = await session.call_tool("recall", {"query": "what did we decide about caching?"})
            if result.is_error:
                raise SystemExit(f"recall failed with {src}: {result.content}")
            return initialized, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. the last landed main)")
    parser.add_argument("--runs", type=int, default=9, help="cold starts of each version")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    base, head = git("rev-parse", "--short", args.base), git("rev-parse", "--short", "HEAD")
    loads = [common.load()]
    with base_sources(base) as base_src:
        sources = {base: base_src, head: SRC}
        for src in sources.values():  # as an installed package is: without this, the first start compiles
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True, capture_output=True)
        runs = interleaved((base, head), args.runs, lambda name: anyio.run(cold_start, sources[name]), loads)

    figures = [("`initialize` answered", 0), ("first `recall` answered", 1)]
    what = f"`serve` over stdio, spawned cold, median of {args.runs}"
    how = "Runs interleaved, each in a fresh data directory."
    table_text = table(what, runs, figures, 0, how)
    common.publish("start-against", table_text, args.write, command=f"python benchmarks/start_against.py --base {args.base}", loads=loads)


if __name__ == "__main__":
    main()
