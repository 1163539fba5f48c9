"""The shared server (LEDGER_SHARED_SERVER) against a server per client, in one run on one project.

    python benchmarks/shared_server.py            # about 2 minutes
    python benchmarks/shared_server.py --write    # also writes the README's table

What it measures:
- `initialize` answered after spawn (median and p95 of --runs): `serve` as it runs by default (its own
  server), a proxy while the project's shared server is up, and a proxy that has to start the shared server
  first (it is stopped before each run);
- resident memory of three clients on one project once each has had a recall answered (so that the model is
  loaded): three servers of their own, against three proxies plus the shared server. RSS counts the pages
  processes share (libraries) once per process; PSS splits them between the processes, so it adds up.

The project holds a few dozen memories; the code index is on and the file watcher off.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import common

HERE = Path(__file__).parent
EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))
CORPUS = json.loads((HERE / "data" / "recall_corpus.json").read_text())
CLIENTS = 3


def environment(shared: bool) -> dict[str, str]:
    env = {"HOME": os.environ.get("HOME", "/"), "LEDGER_WATCH": "false"}
    if "PYTHONPATH" in os.environ:  # a checkout's code, when run from one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if shared:
        env["LEDGER_SHARED_SERVER"] = "true"
    return env


def params(root: Path, shared: bool) -> StdioServerParameters:
    return StdioServerParameters(command=EXECUTABLE, args=["serve", "--root", str(root)], env=environment(shared), cwd=str(root))


@asynccontextmanager
async def client(root: Path, shared: bool) -> AsyncIterator[tuple[ClientSession, float]]:
    """An initialized client, and the seconds from spawning its `serve` to the `initialize` answer."""
    started = time.perf_counter()
    async with stdio_client(params(root, shared)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session, time.perf_counter() - started


def shared_server(root: Path) -> int | None:
    """The pid of the project's live shared server, if one is up."""
    for lock in (root / ".ledger").glob("mcp-*.lock"):
        text = lock.read_text()
        try:
            if text.isdigit() and b"--shared-server" in Path(f"/proc/{text}/cmdline").read_bytes():
                return int(text)
        except OSError:
            continue
    return None


def stop_shared_server(root: Path) -> None:
    pid = shared_server(root)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    while shared_server(root) == pid:
        time.sleep(0.05)


async def initialize_times(root: Path, runs: int, shared: bool, cold: bool) -> list[float]:
    times = []
    for _ in range(runs):
        if cold:
            stop_shared_server(root)
        async with client(root, shared) as (session, seconds):
            times.append(seconds)
            assert not (await session.call_tool("status", {})).is_error
    return times


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of a process, in MB."""
    rss = pss = 0.0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1]) / 1024
        elif line.startswith("Pss:"):
            pss = int(line.split()[1]) / 1024
    return rss, pss


async def three_clients(root: Path, shared: bool) -> dict[str, float]:
    """Resident memory of CLIENTS clients on `root`, each having had a recall answered with the model loaded."""
    async with AsyncExitStack() as stack:
        for n in range(CLIENTS):
            session, _ = await stack.enter_async_context(client(root, shared))
            with anyio.fail_after(300):
                while (await session.call_tool("status", {})).structured_content["embedding"]["state"] != "ready":
                    await anyio.sleep(0.2)
            result = await session.call_tool("recall", {"query": f"how do retries back off? ({n})"})
            assert not result.is_error and result.structured_content["mode"] == "hybrid", result
        await anyio.sleep(1.0)
        pids = common.children(os.getpid()) + ([pid] if shared and (pid := shared_server(root)) is not None else [])
        rows = [memory_mb(pid) for pid in pids]
    return {
        "processes": len(pids),
        "rss": sum(r for r, _ in rows),
        "pss": sum(p for _, p in rows),
        "largest_rss": max(r for r, _ in rows),
        "smallest_rss": min(r for r, _ in rows),
    }


async def seed(root: Path) -> None:
    async with client(root, False) as (session, _):
        for memory in CORPUS["memories"][:40]:
            await session.call_tool("remember", {"text": memory["text"]})


def stats(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.0f} / {common.percentile(times, 95) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="spawns per way of starting (at least 5)")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    load_before = common.load()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        anyio.run(seed, root)
        try:
            plain = anyio.run(initialize_times, root, args.runs, False, False)
            cold = anyio.run(initialize_times, root, args.runs, True, True)
            anyio.run(initialize_times, root, 1, True, False)  # the shared server is up from here
            warm = anyio.run(initialize_times, root, args.runs, True, False)
            print(f"initialize: own {plain}, proxy warm {warm}, proxy cold {cold}", file=sys.stderr)
            stop_shared_server(root)
            own = anyio.run(three_clients, root, False)
            shared = anyio.run(three_clients, root, True)
            print(f"memory: own {own}, shared {shared}", file=sys.stderr)
        finally:
            stop_shared_server(root)
    load_after = common.load()
    body = "\n".join(
        [
            f"| `initialize` answered after spawn, {args.runs} spawns each | median / p95 |",
            "|---|---|",
            f"| `serve`, a server of its own (the default) | {stats(plain)} |",
            f"| proxy, shared server already up (LEDGER_SHARED_SERVER) | {stats(warm)} |",
            f"| proxy that starts the shared server (none up) | {stats(cold)} |",
            "",
            f"| {CLIENTS} clients on one project, model loaded | processes | RSS sum, MB | PSS sum, MB | largest process RSS, MB |",
            "|---|---|---|---|---|",
            f"| a server each (the default) | {own['processes']} | {own['rss']:.0f} | {own['pss']:.0f} | {own['largest_rss']:.0f} |",
            (
                f"| proxies + one shared server | {shared['processes']} | {shared['rss']:.0f} | {shared['pss']:.0f} | "
                f"{shared['largest_rss']:.0f} (each proxy {shared['smallest_rss']:.0f}) |"
            ),
        ]
    )
    command = "python benchmarks/shared_server.py --write"
    common.publish("shared-server", body, args.write, command=command, loads=[load_before, load_after])


if __name__ == "__main__":
    main()
