"""Where the resident memory of `project-ledger serve` goes, and how much of it the embedding model takes.

    python benchmarks/serve_memory.py            # rich, about 3 minutes
    python benchmarks/serve_memory.py --write    # also updates the README's serve-memory section

1. `serve` over stdio (the official MCP client) on the rich sdist, fresh data dir. Its /proc/PID/smaps is
   read right after `initialize`, after the initial code scan, and once every symbol has its vector. Resident
   pages are summed by what they map: anonymous memory (Python objects, SQLite caches, the ONNX Runtime
   weights and arena: all malloc'd), the onnxruntime library, other libraries and Python, files under the
   data dir (the index shards' memory maps, the journal), the model file.
2. The model alone, in a fresh process: resident memory after the imports, after the model loads, and after
   embedding 256 symbol texts, with ONNX Runtime's CPU memory arena on (as shipped) and off, with
   `malloc_trim` after each round when off (freed blocks otherwise stay with the process); medians of 3.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from code_index import EXECUTABLE, RICH, log, sdist, server_pid, until_scanned
from readme_table import replace_section

PROBE = r"""
import ctypes, json, sys
from pathlib import Path
from project_ledger.search import embedding
from fastembed import TextEmbedding

def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024

arena, texts = sys.argv[1] == "on", json.loads(Path(sys.argv[3]).read_text())
steps = {"imports": rss()}
if not arena:
    plain = TextEmbedding.__init__
    TextEmbedding.__init__ = lambda self, *a, **k: plain(self, *a, **{**k, "enable_cpu_mem_arena": False})
embedder = embedding.create_embedder(None, None, Path(sys.argv[2]), None)
embedder.load()
steps["model loaded"] = rss()
for start in range(0, len(texts), 128):
    embedder.embed_documents(texts[start : start + 128])
    if not arena:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
steps["after 256 symbol texts"] = rss()
steps["peak"] = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print(json.dumps(steps))
"""


def smaps(pid: int, data_dir: Path) -> dict[str, float]:
    """Resident MB of process `pid` by what its mappings map."""
    groups: dict[str, float] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            path = fields[5] if len(fields) > 5 else ""
            if not path or path.startswith("[heap]") or path.startswith("[anon"):
                name = "anonymous (Python, SQLite caches, ONNX weights and arena)"
            elif path.startswith(str(data_dir)):
                name = "files under the data dir (index shards, journal)"
            elif path.endswith(".onnx"):
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


async def serve_breakdown(root: Path, data_dir: Path) -> list[tuple[str, dict[str, float]]]:
    shutil.rmtree(data_dir, ignore_errors=True)
    env = {key: os.environ[key] for key in ("HOME", "PATH", "PYTHONPATH") if key in os.environ}
    params = StdioServerParameters(
        command=EXECUTABLE, args=["serve", "--root", str(root), "--data-dir", str(data_dir)], env=env, cwd=str(root)
    )
    snapshots = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        pid = server_pid(data_dir)
        assert pid is not None
        snapshots.append(("after initialize", smaps(pid, data_dir)))
        await until_scanned(session, 600)
        snapshots.append(("after the initial scan", smaps(pid, data_dir)))
        deadline = time.perf_counter() + 900
        while time.perf_counter() < deadline:
            result = await session.call_tool("status", {})
            if not result.structured_content["code"]["pending_vectors"]:
                break
            await asyncio.sleep(1)
        snapshots.append(("every symbol embedded", smaps(pid, data_dir)))
    shutil.rmtree(data_dir, ignore_errors=True)
    return snapshots


def model_alone(texts_file: Path, cache: Path, arena: str) -> dict[str, float]:
    import json

    done = subprocess.run(
        [sys.executable, "-c", PROBE, arena, str(cache), str(texts_file)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    import json

    from embedding import symbol_texts

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "project-ledger-bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    root = sdist(args.work, RICH)
    if root is None:
        raise SystemExit("the rich sdist is needed (pip download failed)")
    loads = [Path("/proc/loadavg").read_text().split()[0]]
    snapshots = asyncio.run(serve_breakdown(root, args.work / "serve-memory-data"))
    groups = sorted({name for _, groups in snapshots for name in groups}, key=lambda n: -snapshots[-1][1].get(n, 0))
    lines = [
        f"| resident MB of `serve` on {root.name} | " + " | ".join(label for label, _ in snapshots) + " |",
        "|---|" + "---|" * len(snapshots),
    ]
    lines += [f"| {name} | " + " | ".join(f"{g.get(name, 0):.0f}" for _, g in snapshots) + " |" for name in groups]
    lines.append("| **total** | " + " | ".join(f"**{sum(g.values()):.0f}**" for _, g in snapshots) + " |")
    texts_file = args.work / "serve-memory-texts.json"
    texts_file.write_text(json.dumps(symbol_texts(root, args.work / "embedding-data" / root.name, 256)))
    cache = args.work / "models"
    runs: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for _ in range(args.runs):
        for arena in runs:
            runs[arena].append(model_alone(texts_file, cache, arena))
            log(f"model alone, arena {arena}: {runs[arena][-1]}")
    loads.append(Path("/proc/loadavg").read_text().split()[0])
    steps = list(runs["on"][0])
    lines += [
        "",
        "| the model alone, resident MB | " + " | ".join(steps) + " |",
        "|---|" + "---|" * len(steps),
    ]
    for arena, label in (("on", "ONNX arena on (shipped)"), ("off", "ONNX arena off, `malloc_trim` after each round")):
        lines.append(f"| {label} | " + " | ".join(f"{statistics.median(r[s] for r in runs[arena]):.0f}" for s in steps) + " |")
    lines += ["", f"Load average {', '.join(loads)} (before, after). `python benchmarks/serve_memory.py --write`."]
    table = "\n".join(lines)
    print(table)
    if args.write:
        replace_section("serve-memory", table)


if __name__ == "__main__":
    main()
