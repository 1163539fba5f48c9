"""Throughput and latency of a shared ledger over streamable HTTP, with 1, 4 and 16 concurrent clients.

    python benchmarks/http_load.py            # prints the table
    python benchmarks/http_load.py --write    # also updates the README

One `project-ledger serve --transport http` process on loopback, with a bearer
token, on a ledger holding the memories of the recall corpus (all embedded before
timing starts). Each client opens its own MCP session and makes CALLS calls,
alternating `remember` (a new fact) and `recall` (a corpus query, hybrid). The
table gives calls per second over the whole run (wall clock, first call to last
answer) and p50/p95 latency per kind of call, from every call of every client.
Each configuration runs REPEATS times on a fresh ledger; the table shows the run
with the median throughput. Client and server share this machine's cores.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import common

CORPUS = json.loads((common.DATA / "recall_corpus.json").read_text())
EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))
TOKEN = "bench-" + "0f1e2d3c" * 4
CLIENTS = (1, 4, 16)
CALLS = 40
REPEATS = 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def session_calls(url: str, client: int, latencies: dict[str, list[float]]) -> None:
    queries = [q["query"] for q in CORPUS["queries"]]
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for i in range(CALLS):
            if i % 2 == 0:
                tool, arguments = "remember", {"text": f"Client {client} noted fact {i}: job {client}-{i} runs at {i % 24}:00 UTC."}
            else:
                tool, arguments = "recall", {"query": queries[(client * CALLS + i) % len(queries)], "k": 5}
            started = time.perf_counter()
            result = await session.call_tool(tool, arguments)
            latencies[tool].append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(f"{tool} failed: {result.content[0].text}")


async def seed(url: str) -> None:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for memory in CORPUS["memories"]:
            await session.call_tool("remember", {"text": memory["text"], "kind": memory["kind"], "tags": memory["tags"]})
        while True:  # every vector computed and indexed, so recalls are hybrid and nothing is pending
            status = (await session.call_tool("status", {})).structured_content or {}
            index, model = status["index"], status["embedding"]
            if model.get("state") == "ready" and index.get("lag", 0) == 0 and index.get("missing_embeddings", 0) == 0:
                return
            await anyio.sleep(0.2)


def run(clients: int) -> tuple[float, dict[str, list[float]]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        port = free_port()
        env = {**os.environ, "LEDGER_AUTH_TOKEN": TOKEN, "LEDGER_CODE_INDEX": "false"}
        server = subprocess.Popen(
            [EXECUTABLE, "serve", "--root", str(root), "--transport", "http", "--port", str(port)],
            env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            url = f"http://127.0.0.1:{port}/mcp"
            anyio.run(seed, url)
            latencies: dict[str, list[float]] = {"remember": [], "recall": []}

            async def all_clients() -> None:
                async with anyio.create_task_group() as tasks:
                    for client in range(clients):
                        tasks.start_soon(session_calls, url, client, latencies)

            started = time.perf_counter()
            anyio.run(all_clients)
            return clients * CALLS / (time.perf_counter() - started), latencies
        finally:
            server.terminate()
            server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update the README's table")
    args = parser.parse_args()
    loads = [common.load()]
    rows = [
        "| clients | calls/s | remember p50 / p95 | recall p50 / p95 |",
        "|---|---|---|---|",
    ]
    for clients in CLIENTS:
        runs = sorted((run(clients) for _ in range(REPEATS)), key=lambda r: r[0])
        rate, latencies = runs[len(runs) // 2]
        spread = ", ".join(f"{r[0]:.0f}" for r in runs)

        p50, p95 = ({tool: f"{common.percentile(values, q) * 1000:.0f} ms" for tool, values in latencies.items()} for q in (50, 95))
        rows.append(f"| {clients} | {rate:.0f} (runs: {spread}) | {p50['remember']} / {p95['remember']} | {p50['recall']} / {p95['recall']} |")
        print(rows[-1], flush=True)
    loads.append(common.load())
    text = "\n".join(
        [
            *rows,
            "",
            f"Each client makes {CALLS} calls, remember and recall alternating, on its own MCP session over loopback with a bearer "
            f"token; the ledger starts with the {len(CORPUS['memories'])} corpus memories embedded. Median of {REPEATS} runs by "
            "throughput.",
        ]
    )
    common.publish("http-load", text, args.write, command="python benchmarks/http_load.py", loads=loads)


if __name__ == "__main__":
    main()
