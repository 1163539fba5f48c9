"""How long after its last memory is embedded a server's status says it has caught up, on a project with no code.

    python benchmarks/status_settle.py            # about a minute
    python benchmarks/status_settle.py --write    # also writes the table into docs

A client or script that waits for the ledger to settle polls `status` until the memory index has no lag, no memory
lacks a vector, the model is ready, and the code search index has no lag and no symbol lacks a vector. On a project
with no code the code search lag used to stay at 1 for ever (issue 32). Each run starts `project-ledger serve` (file
watcher on, as clients start it) on a fresh project holding only `.git`, stores the corpus's memories
(`data/recall_corpus.json`) one call after another, then polls `status` every 50 ms: "embedded" is the first status
with every memory's vector stored, "settled" the first with everything above at zero.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import common

EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))
MEMORIES = json.loads((common.DATA / "recall_corpus.json").read_text())["memories"]
POLL_SECONDS = 0.05
GIVE_UP_SECONDS = 300
TARGET_SECONDS = 5.0


async def one_run(root: Path) -> tuple[float, float]:
    """(seconds from the last write to every vector stored, seconds from then to settled)."""
    env = {"HOME": os.environ.get("HOME", "/"), **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {})}
    params = StdioServerParameters(command=EXECUTABLE, args=["serve", "--root", str(root)], env=env, cwd=str(root))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for memory in MEMORIES:
            arguments = {"text": memory["text"], "kind": memory["kind"], "tags": memory["tags"], "session": memory["session"]}
            assert not (await session.call_tool("remember", arguments)).is_error
        written = time.perf_counter()
        embedded = None
        with anyio.fail_after(GIVE_UP_SECONDS):
            while True:
                status = (await session.call_tool("status", {})).structured_content
                now = time.perf_counter()
                index, code = status["index"], status.get("code") or {}
                if embedded is None and status["embedding"]["state"] == "ready" and index.get("missing_embeddings", 0) == 0:
                    embedded = now
                if embedded is not None and index.get("lag", 0) == 0 and (code.get("search_lag", 0), code.get("pending_vectors", 0)) == (0, 0):
                    return embedded - written, now - embedded
                await anyio.sleep(POLL_SECONDS)


def table(runs: list[tuple[float, float]]) -> str:
    embed, settle = [run[0] for run in runs], [run[1] for run in runs]
    return "\n".join([
        "| project | memories | last write to every vector stored, median | vectors stored to settled, median (max) | target |",
        "|---|---|---|---|---|",
        f"| no code, watcher on | {len(MEMORIES)} | {statistics.median(embed):.2f} s | {statistics.median(settle):.2f} s "
        f"({max(settle):.2f} s) | ≤ {TARGET_SECONDS:g} s |",
    ])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write the table into the docs")
    args = parser.parse_args()
    load_before = common.load()
    runs = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ledger-settle-") as folder:
            root = Path(folder) / "project"
            (root / ".git").mkdir(parents=True)
            runs.append(anyio.run(one_run, root))
    command = f"python benchmarks/status_settle.py --runs {args.runs}"
    common.publish("status_settle", table(runs), args.write, command=command, loads=[load_before, common.load()])


if __name__ == "__main__":
    main()
