"""Speed and memory of the ledger, measured through the same entry points users run.

    python benchmarks/performance.py                  # 1k, 10k and 100k memories (about 12 minutes)
    python benchmarks/performance.py --sizes 1000     # a quick run
    python benchmarks/performance.py --write          # also updates the README's table, results/performance.json and its figure
    python benchmarks/performance.py --plot-only      # redraws docs/bench/latency-vs-size.png from results/performance.json

What it measures (medians over repeated runs; p50/p95 over 200 queries):
- cold start of `project-ledger serve` to the `initialize` answer, and to the first `recall` answered;
- `remember` over MCP: one call at a time, and 16 calls in flight on one connection; and conversation
  turns one at a time (each one read by the capture extractors);
- `recall` latency at each size, in-process with the query embedding timed apart, and end to end over stdio;
- `remember` latency over stdio at each size, one call at a time once the server has settled (its
  near-duplicate check searches the ledger);
- rebuilding the index from the journal (stored vectors, no model run) at each size;
- resident memory of a server process after it has answered recalls.

Large journals are filled through `Journal.insert` with texts built from the
benchmark corpus's vocabulary and random unit vectors stored as the default
model's embeddings, so that sizes up to 100k do not need hours of embedding.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import common
from common import percentile
from project_ledger.config import Settings
from project_ledger.factory import open_ledger
from project_ledger.search.embedding import create_embedder, to_bytes
from project_ledger.storage.index_sync import GRAPH_MIN_POINTS
from project_ledger.storage.journal import Journal
from project_ledger.text.tokens import TokenCounter

CORPUS = json.loads((common.DATA / "recall_corpus.json").read_text())
CONVERSATION = json.loads((common.DATA / "project_conversation.json").read_text())
EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))
REMEMBERS = 100  # `remember` calls timed at each size


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def server(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=EXECUTABLE, args=["serve", "--root", str(root)], env={"HOME": os.environ.get("HOME", "/")})


async def cold_start(runs: int) -> dict[str, Any]:
    initialize, first_recall, tools_tokens = [], [], 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            async with stdio_client(server(Path(tmp))) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                initialize.append(time.perf_counter() - started)
                result = await session.call_tool("recall", {"query": "what did we decide about caching?"})
                assert not result.is_error
                first_recall.append(time.perf_counter() - started)
                tools = await session.list_tools()
                listing = json.dumps([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools.tools])
                tools_tokens = TokenCounter().count(listing)
    return {"initialize": statistics.median(initialize), "first_recall": statistics.median(first_recall), "tools_tokens": tools_tokens}


async def remember_throughput(count: int) -> dict[str, float]:
    texts = [m["text"] for m in CORPUS["memories"]]
    with tempfile.TemporaryDirectory() as tmp:
        async with stdio_client(server(Path(tmp))) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first_write = started = time.perf_counter()
            for n in range(count):
                await session.call_tool("remember", {"text": f"{texts[n % len(texts)]} (#{n})"})
            sequential = count / (time.perf_counter() - started)

            limiter = anyio.Semaphore(16)

            async def one(n: int) -> None:
                async with limiter:
                    await session.call_tool("remember", {"text": f"{texts[n % len(texts)]} (pipelined #{n})"})

            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for n in range(count):
                    group.start_soon(one, n)
            pipelined = count / (time.perf_counter() - started)

            while True:  # the background worker embeds all 2*count memories, starting while they are written
                status = (await session.call_tool("status", {})).structured_content
                if status["index"]["missing_embeddings"] == 0 and status["embedding"]["state"] == "ready":
                    break
                await anyio.sleep(0.2)
            embedded = 2 * count / (time.perf_counter() - first_write)

            turns = [(s["id"], turn) for s in CONVERSATION["sessions"] for turn in s["turns"]][:count]
            captured = 0
            started = time.perf_counter()
            for session_id, turn in turns:
                arguments = {"text": turn["text"], "kind": "turn", "session": session_id, "role": turn["role"]}
                result = (await session.call_tool("remember", arguments)).structured_content
                captured += len(result.get("captured", []))  # left out of a result when empty
            turn_rate = len(turns) / (time.perf_counter() - started)
    return {"sequential": sequential, "pipelined": pipelined, "embedded_per_s": embedded, "turns": turn_rate, "captured": captured}


def synthetic_journal(root: Path, size: int, seed: int = 7) -> Path:
    """A journal of `size` memories with stored vectors, as if the default model had embedded them."""
    rng = random.Random(seed)
    words = sorted({w for m in CORPUS["memories"] for w in m["text"].split() if w.isascii()})
    kinds = ["note", "decision", "definition", "todo", "error", "turn"]
    data_dir = root / ".ledger"
    journal = Journal(data_dir / "journal.sqlite3")
    identity = create_embedder(None, None, data_dir / "model", None).identity
    vectors_rng = np.random.default_rng(seed)
    batch: list[tuple[int, bytes]] = []
    for n in range(size):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(12, 60)))
        journal.insert(
            text=text,
            kind=rng.choice(kinds),
            tags=[f"t{rng.randint(0, 30)}"],
            session=f"s{n // 200}",
            role=None,
            files=[],
            symbols=[],
            pinned=False,
            supersedes=None,
        )
        vector = vectors_rng.normal(size=384).astype(np.float32)
        batch.append((n + 1, to_bytes(vector / np.linalg.norm(vector))))
        if len(batch) == 1000:
            journal.store_embeddings(identity, batch)
            batch = []
    if batch:
        journal.store_embeddings(identity, batch)
    journal.close()
    return root


def timed(fn: Callable[..., Any], into: list[float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - started)

    return wrapper


def queries(count: int) -> list[str]:
    pool = [q["query"] for q in CORPUS["queries"]]
    return [pool[n % len(pool)] for n in range(count)]


def in_process_recall(root: Path) -> dict[str, float]:
    ledger = open_ledger(Settings(root=root), root)
    started = time.perf_counter()
    ledger.sync.open_now()
    rebuild = time.perf_counter() - started
    ledger.sync.embedder.load()
    embed_times: list[float] = []
    ledger.sync.embedder.embed_query = timed(ledger.sync.embedder.embed_query, embed_times)  # type: ignore[method-assign]
    totals: list[float] = []
    for query in queries(220):
        started = time.perf_counter()
        result = ledger.recall(query, k=8)
        totals.append(time.perf_counter() - started)
        assert result.mode == "hybrid"
    totals, embed_times = totals[20:], embed_times[20:]  # first calls warm caches
    without_embedding = [t - e for t, e in zip(totals, embed_times, strict=True)]
    ledger.close()
    return {
        "rebuild": rebuild,
        "p50": percentile(without_embedding, 50),
        "p95": percentile(without_embedding, 95),
        "embed_p50": percentile(embed_times, 50),
        "embed_p95": percentile(embed_times, 95),
    }


async def settle(session: ClientSession) -> None:
    """Until background work is done: index caught up, and graphs built where the index is large enough."""
    while True:
        index = (await session.call_tool("status", {})).structured_content["index"]
        # A lean status leaves out what is zero, empty or None (mcp/app.py).
        graphs_due = index.get("points", 0) >= GRAPH_MIN_POINTS and not any("graphs built" in e for e in index.get("events", []))
        if index.get("compaction") is None and index.get("lag", 0) == 0 and not graphs_due:
            return
        await anyio.sleep(1)


async def stdio_recall(root: Path) -> dict[str, float]:
    """Recall, then remember, latency of a server whose background work (embedding, compaction) has finished."""
    async with stdio_client(server(root)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("recall", {"query": "warm up"})
        started = time.perf_counter()
        with anyio.fail_after(1800):  # a large index gets its search graphs built by a background compaction first
            await settle(session)
        compacted = time.perf_counter() - started
        latencies = []
        for query in queries(100):
            started = time.perf_counter()
            result = await session.call_tool("recall", {"query": query})
            latencies.append(time.perf_counter() - started)
            assert not result.is_error
        rss = rss_of_children()
        writes = []
        for n, memory in enumerate(CORPUS["memories"][:REMEMBERS]):
            started = time.perf_counter()
            result = await session.call_tool("remember", {"text": f"{memory['text']} (#{n})", "kind": memory["kind"]})
            writes.append(time.perf_counter() - started)
            assert not result.is_error
    return {
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
        "remember_p50": percentile(writes, 50),
        "remember_p95": percentile(writes, 95),
        "rss_mb": rss,
        "compaction": compacted,
    }


def rss_of_children() -> float:
    """Resident memory of the `project-ledger serve` process this benchmark started, in MB."""
    started = common.children(os.getpid())
    return common.status_mb(started[0]) if started else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--runs", type=int, default=5, help="cold starts to take the median of")
    parser.add_argument("--write", action="store_true", help="write the table into README.md, results/performance.json and the figure")
    parser.add_argument("--plot-only", action="store_true", help="redraw the figure from results/performance.json without a run")
    args = parser.parse_args()
    if args.write or args.plot_only:
        import plots  # before the run: without matplotlib (the `bench` extra) a run that is to be written stops here

        if args.plot_only:
            print(plots.latency_vs_size(common.load_results("performance")))
            return

    load_at_start = os.getloadavg()
    start = anyio.run(cold_start, args.runs)
    print(f"cold start: {start}", file=sys.stderr)
    writes = anyio.run(remember_throughput, 200)
    print(f"remember: {writes}", file=sys.stderr)
    rows = [
        (f"`initialize` answered after spawn (median of {args.runs})", ms(start["initialize"])),
        ("first `recall` answered after spawn (index open + model load)", ms(start["first_recall"])),
        ("`tools/list` size", f"{start['tools_tokens']} tokens"),
        ("`remember` over stdio, one call at a time", f"{writes['sequential']:.0f} /s"),
        ("`remember` over stdio, 16 calls in flight", f"{writes['pipelined']:.0f} /s"),
        ("memories embedded per second, first write to last vector (lower bound: shares the CPU with the writes)", f"{writes['embedded_per_s']:.0f} /s"),
        (f"`remember` of conversation turns over stdio, one at a time (capture on: {writes['captured']} memories from 200 turns)", f"{writes['turns']:.0f} /s"),
    ]
    per_size = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            root = synthetic_journal(Path(tmp), size)
            print(f"{size}: journal filled in {time.perf_counter() - started:.0f}s", file=sys.stderr)
            local = in_process_recall(root)
            remote = anyio.run(stdio_recall, root)
            print(f"{size}: {local} {remote}", file=sys.stderr)
        per_size.append({"size": size, "in_process": local, "stdio": remote})
        label = f"{size:,}"
        rows += [
            (f"index rebuild from the journal, {label} memories", f"{local['rebuild']:.1f} s"),
            (f"`recall` p50 / p95 without query embedding (in-process, full scan), {label}", f"{ms(local['p50'])} / {ms(local['p95'])}"),
            (f"query embedding p50 / p95, {label}", f"{ms(local['embed_p50'])} / {ms(local['embed_p95'])}"),
            (f"background compaction (search graphs) before the stdio run, {label}", f"{remote['compaction']:.0f} s"),
            (f"`recall` over stdio p50 / p95 (embedding included), {label}", f"{ms(remote['p50'])} / {ms(remote['p95'])}"),
            (
                f"`remember` over stdio p50 / p95 ({REMEMBERS} calls, one at a time, after the recalls), {label}",
                f"{ms(remote['remember_p50'])} / {ms(remote['remember_p95'])}",
            ),
            (f"server resident memory after recalls, {label}", f"{remote['rss_mb']:.0f} MB"),
        ]
    load_at_end = os.getloadavg()
    table = "\n".join(["| measure | result |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)])
    command, loads = "python benchmarks/performance.py", [load_at_start[0], load_at_end[0]]
    figures = {"load_average": {"start": load_at_start, "end": load_at_end}, "cold_start": start, "remember": writes, "sizes": per_size}
    if args.write:
        common.save_results("performance", figures, command=command, loads=loads)
        figure = plots.latency_vs_size(common.load_results("performance"))
        table += "\n\n" + plots.image_link("Recall and remember latency against ledger size", figure)
    common.publish("performance", table, args.write, command=command, loads=loads, figures=figures)


if __name__ == "__main__":
    main()
