"""Where the resident memory of `project-ledger serve` goes, and how much of it the embedding model takes.

    python benchmarks/serve_memory.py            # 10k memories, rich, django; about 10 minutes
    python benchmarks/serve_memory.py --write    # also updates the README's serve-memory section
    python benchmarks/serve_memory.py --only memories   # the 10k memories part alone (about a minute)

1. `serve` over stdio (the official MCP client), fresh data dirs, its /proc/PID/smaps read at each step and
   resident pages summed by what they map: anonymous memory (Python objects, SQLite caches, the ONNX Runtime
   weights and activations: all malloc'd), the onnxruntime library, other libraries and Python, files under
   the data dir (the index shards' memory maps, the journal), the model file. Peak is VmHWM at the end.
   - 10k memories (the synthetic journal of `performance.py`: stored vectors, so no embedding at start):
     after `initialize`, then after 20 recalls (model loaded, index open, background work settled); then a second
     server on the same data dir (the index built and flushed by the first) after 20 recalls. Peak: the higher one.
   - rich: after `initialize`, after the initial code scan, once every symbol has its vector.
   - django: after `initialize`, after the initial code scan, after `--django-seconds` of embedding its
     symbols (all of them would take tens of minutes).
2. The model alone, in a fresh process: resident memory after the imports, after the model loads, and after
   embedding 256 rich symbol texts (rounds of 128, as code search hands them over, through `for_code`), fastembed (how the ledger ran the model before) against the shipped
   embedder; medians of `--runs`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import common
from code_index import DJANGO, EXECUTABLE, RICH, log, sdist, server_pid, until_scanned
from common import status_mb

PROBE = r"""
import json, os, sys
from pathlib import Path

def rss(field="VmRSS"):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(field)) / 1024

way, cache, texts = sys.argv[1], Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
if way == "fastembed":
    import fastembed
else:
    import numpy, onnxruntime, tokenizers
from project_ledger.search import embedding
steps = {"imports": rss()}
if way == "fastembed":
    model_dir = embedding.prepare_offline_model(cache)
    embedder = embedding.FastEmbedEmbedder(embedding.DEFAULT_MODEL, embedding.OFFLINE_IDENTITY, model_dir, cache, os.cpu_count())
else:
    embedder = embedding.create_embedder(None, None, cache, None)
embedder.load()
steps["model loaded"] = rss()
symbols = embedding.for_code(embedder)  # the shipped way embeds code symbols under an identity of their own
for start in range(0, len(texts), 128):
    symbols.embed_documents(texts[start : start + 128])
steps["after 256 symbol texts"] = rss()
steps["peak"] = rss("VmHWM")
print(json.dumps(steps))
"""
WAYS = {"fastembed": "fastembed, ONNX arena on (before)", "shipped": "ONNX Runtime directly (shipped)"}


def smaps(pid: int, data_dir: Path) -> dict[str, float]:
    """Resident MB of process `pid` by what its mappings map."""
    groups: dict[str, float] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            path = fields[5] if len(fields) > 5 else ""
            if not path or path.startswith(("[heap]", "[anon")):
                name = "anonymous (Python, SQLite caches, ONNX weights and arena)"
            elif path.startswith(str(data_dir)):
                name = "files under the data dir (index shards, journal)"
            elif path.endswith((".onnx", ".int8")):  # the prepared model's graph and token table
                name = "model file"
            elif "onnxruntime" in path:
                name = "onnxruntime library"
            elif path.startswith("["):
                name = "stacks and kernel pages"
            else:
                name = "other libraries and Python"
        elif fields and fields[0] == "Rss:":
            groups[name] = groups.get(name, 0.0) + int(fields[1]) / 1024
    return groups


def params(root: Path, data_dir: Path | None) -> StdioServerParameters:
    env = {key: os.environ[key] for key in ("HOME", "PATH", "PYTHONPATH") if key in os.environ}
    args = ["serve", "--root", str(root)] + (["--data-dir", str(data_dir)] if data_dir else [])
    return StdioServerParameters(command=EXECUTABLE, args=args, env=env, cwd=str(root))


Snapshots = list[tuple[str, dict[str, float]]]


@asynccontextmanager
async def measured_server(root: Path, data_dir: Path) -> AsyncIterator[tuple[ClientSession, int, Snapshots]]:
    """`serve` over stdio, initialized: its session, its pid, and the first snapshot of its memory."""
    async with stdio_client(params(root, data_dir)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        pid = server_pid(data_dir)
        assert pid is not None
        yield session, pid, [("after initialize", smaps(pid, data_dir))]


async def memories_breakdown(work: Path, size: int) -> tuple[Snapshots, float]:
    from performance import queries, settle, synthetic_journal

    root = work / f"serve-memory-{size}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    synthetic_journal(root, size)
    data_dir = root / ".ledger"
    async with measured_server(root, data_dir) as (session, pid, snapshots):
        await session.call_tool("recall", {"query": "warm up"})
        await settle(session)
        for query in queries(20):
            assert not (await session.call_tool("recall", {"query": query})).is_error
        snapshots.append(("after 20 recalls (model loaded)", smaps(pid, data_dir)))
        peak = status_mb(pid, "VmHWM")
    # As most servers start: on an index a previous one built and flushed.
    async with measured_server(root, data_dir) as (session, pid, _):
        for query in queries(20):
            assert not (await session.call_tool("recall", {"query": query})).is_error
        snapshots.append(("restarted, after 20 recalls", smaps(pid, data_dir)))
        peak = max(peak, status_mb(pid, "VmHWM"))
    shutil.rmtree(root, ignore_errors=True)
    return snapshots, peak


async def code_breakdown(root: Path, data_dir: Path, embed_seconds: float | None) -> tuple[Snapshots, float]:
    """`embed_seconds` None: until every symbol has its vector."""
    shutil.rmtree(data_dir, ignore_errors=True)
    async with measured_server(root, data_dir) as (session, pid, snapshots):
        await until_scanned(session, 900)
        snapshots.append(("after the initial scan", smaps(pid, data_dir)))
        started = time.perf_counter()
        deadline = started + (embed_seconds if embed_seconds is not None else 1800)
        while time.perf_counter() < deadline:
            code = (await session.call_tool("status", {})).structured_content["code"]
            if embed_seconds is None and not code["pending_vectors"]:
                break
            await asyncio.sleep(1)
        label = "every symbol embedded" if embed_seconds is None else f"after {embed_seconds:.0f} s of embedding"
        snapshots.append((label, smaps(pid, data_dir)))
        peak = status_mb(pid, "VmHWM")
    shutil.rmtree(data_dir, ignore_errors=True)
    return snapshots, peak


def table(title: str, snapshots: Snapshots, peak: float) -> list[str]:
    groups = sorted({name for _, groups in snapshots for name in groups}, key=lambda n: -snapshots[-1][1].get(n, 0))
    lines = [f"| resident MB of `serve`, {title} | " + " | ".join(label for label, _ in snapshots) + " |"]
    lines.append("|---|" + "---|" * len(snapshots))
    lines += [f"| {name} | " + " | ".join(f"{g.get(name, 0):.0f}" for _, g in snapshots) + " |" for name in groups]
    lines.append("| **total** | " + " | ".join(f"**{sum(g.values()):.0f}**" for _, g in snapshots) + " |")
    lines.append("| peak (VmHWM) | " + " | ".join([""] * (len(snapshots) - 1) + [f"{peak:.0f}"]) + " |")
    return [*lines, ""]


def model_alone(texts_file: Path, cache: Path, way: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, way, str(cache), str(texts_file)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    from embedding import symbol_texts

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=common.WORK)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--django-seconds", type=float, default=120)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--only", choices=["memories"], help="run only this part (not with --write: the table needs all)")
    args = parser.parse_args()
    if args.only and args.write:
        parser.error("--write updates the whole table: run without --only")
    rich = sdist(args.work, RICH) if args.only is None else None
    if args.only is None and rich is None:
        raise SystemExit("the rich sdist is needed (pip download failed)")
    loads = [common.load()]
    lines = table(f"{args.memories:,} memories", *asyncio.run(memories_breakdown(args.work, args.memories)))
    log("10k done")
    if args.only == "memories":
        loads.append(common.load())
        print("\n".join([*lines, "", common.footer("python benchmarks/serve_memory.py --only memories", loads)]))
        return
    assert rich is not None
    lines += table(f"code index of {rich.name}", *asyncio.run(code_breakdown(rich, args.work / "serve-memory-data", None)))
    log("rich done")
    django = sdist(args.work, DJANGO)
    if django is not None:
        lines += table(
            f"code index of {django.name}",
            *asyncio.run(code_breakdown(django, args.work / "serve-memory-django", args.django_seconds)),
        )
        log("django done")
    texts_file = args.work / "serve-memory-texts.json"
    texts_file.write_text(json.dumps(symbol_texts(rich, args.work / "embedding-data" / rich.name, 256)))
    cache = args.work / "models"
    runs: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    for _ in range(args.runs):
        for way, samples in runs.items():
            samples.append(model_alone(texts_file, cache, way))
            log(f"model alone, {way}: {samples[-1]}")
    loads.append(common.load())
    steps = list(runs["shipped"][0])
    lines += ["| the model alone, resident MB | " + " | ".join(steps) + " |", "|---|" + "---|" * len(steps)]
    for way, label in WAYS.items():
        lines.append(f"| {label} | " + " | ".join(f"{statistics.median(r[s] for r in runs[way]):.0f}" for s in steps) + " |")
    common.publish("serve-memory", "\n".join(lines), args.write, command="python benchmarks/serve_memory.py --write", loads=loads)


if __name__ == "__main__":
    main()
