"""Speed, recall and memory of the code-symbol index on real source trees, next to Universal Ctags.

    python benchmarks/code_index.py              # django, rich, a Go and a Rust tree (about 12 minutes)
    python benchmarks/code_index.py --quick      # rich only, for development (about 3 minutes)
    python benchmarks/code_index.py --write      # also updates the README's code-index section

What it measures, through the entry points users run:
- a full index (`project-ledger index --json`, a subprocess, wall clock, fresh data dir) and a
  re-index with nothing changed, median of `--runs`; Universal Ctags
  (`ctags -R --output-format=json --fields=+nKz`) on the same tree in the same run, and on exactly
  the files we indexed (`-L`), with our time as a multiple of ctags';
- peak resident memory of the `index` process (and of it plus its parse workers, sampled);
- definition recall on the Python trees against the standard library's `ast` (every
  FunctionDef, AsyncFunctionDef and ClassDef at any depth, matched on path, name and line);
- recall on the Go and Rust trees against ctags, for the kinds both produce (path, name, line);
- dense embedding of the symbols of a medium tree (`index --embed`'s loop, in-process, timed apart
  from the scan and the model load), and the same catch-up seen by a running server;
- edit-to-visible latency: `project-ledger serve` over stdio (the official MCP client) on a copy of
  a small tree; a new function is appended to a file and `find_symbol` polled every 20 ms;
- resident memory of a server right after its initial scan of the large tree.

Trees: django and rich sdists (`pip download --no-binary :all:`) and, when Debian's
`golang-1.*-src` and `librust-*-dev` packages are installed, part of the Go standard library and a
few Rust crates from /usr/share/cargo/registry. Everything is cached under
~/.cache/project-ledger-bench (or --work); a tree that is not there is skipped and the output says so.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import compileall
import glob
import json
import os
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import common
import project_ledger
from common import children, log, percentile, status_mb
from project_ledger.code.languages import language_for

EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))
CTAGS = "/usr/bin/ctags"
DJANGO = "django==5.2.*"
RICH = "rich==14.*"
GO_PACKAGES = ("net", "encoding", "fmt", "strings", "sort")  # of the Go standard library's src/
RUST_CRATES = ("regex", "regex-syntax", "syn", "serde", "clap", "rayon")  # from /usr/share/cargo/registry
# ctags kinds that name the same things as ours (functions, methods, types, constants, modules, macros).
CTAGS_KINDS = {
    "go": {"func", "struct", "interface", "type", "talias", "const"},
    "rust": {"function", "method", "struct", "enum", "interface", "typedef", "module", "macro"},
}
PROBES = 30
# The targets for a full index against ctags: the large Python tree, and the Go and Rust trees.
RATIO_TARGETS = {"large": "≤ 3×", "go": "≤ 4×", "rust": "≤ 4×"}
POLL_SECONDS = 0.02


def child_env() -> dict[str, str]:
    """This environment without LEDGER_* settings, so every run sees the defaults."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}


# -- trees -----------------------------------------------------------------------


@dataclass
class Tree:
    name: str  # e.g. "django 5.2.19"
    root: Path
    language: str  # the language recall is checked for
    size: str  # "large", "medium", ...


def sdist(work: Path, requirement: str) -> Path | None:
    """Download (once) and extract (once) a PyPI source distribution; the extracted directory."""
    downloads = work / "downloads"
    project = re.split(r"[=<>!~]", requirement)[0]
    downloads.mkdir(parents=True, exist_ok=True)
    tarballs = sorted(downloads.glob(f"{project}-*.tar.gz"))
    if not tarballs:
        log(f"downloading the {requirement} sdist")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", requirement, "-d", str(downloads)]
        done = subprocess.run(command, capture_output=True, text=True)
        tarballs = sorted(downloads.glob(f"{project}-*.tar.gz"))
        if done.returncode != 0 or not tarballs:
            log(f"could not download {requirement}: {done.stderr.strip()[-500:]}")
            return None
    tarball = tarballs[-1]
    target = work / "src" / tarball.name.removesuffix(".tar.gz")
    if not target.is_dir():
        with tarfile.open(tarball) as archive:
            archive.extractall(work / "src", filter="data")
    return target


def go_tree(work: Path) -> Path | None:
    sources = sorted(glob.glob("/usr/share/go-1.*/src"), key=lambda p: [int(n) for n in re.findall(r"\d+", p)])
    if not sources:
        return None
    version = Path(sources[-1]).parent.name  # go-1.19
    target = work / "src" / f"{version}-std-subset"
    if not target.is_dir():
        partial = target.with_suffix(".partial")
        shutil.rmtree(partial, ignore_errors=True)
        for package in GO_PACKAGES:
            if (Path(sources[-1]) / package).is_dir():
                shutil.copytree(Path(sources[-1]) / package, partial / package, symlinks=False)
        partial.rename(target)
    return target


def rust_tree(work: Path) -> Path | None:
    registry = Path("/usr/share/cargo/registry")
    crates = []
    for crate in RUST_CRATES:
        found = sorted(p for p in registry.glob(f"{crate}-*") if re.fullmatch(rf"{re.escape(crate)}-\d[\w.+-]*", p.name))
        if found:
            crates.append(found[-1])
    if not crates:
        return None
    target = work / "src" / "rust-crates-subset"
    if not target.is_dir():
        partial = target.with_suffix(".partial")
        shutil.rmtree(partial, ignore_errors=True)
        for crate in crates:  # Debian's registry entries may hold symlinks: copy their contents, as a checkout would have
            shutil.copytree(crate, partial / crate.name, symlinks=False, ignore_dangling_symlinks=True)
        partial.rename(target)
    return target


def tree_label(root: Path) -> str:
    return root.name.replace("-", " ", 1) if re.match(r"^(django|rich)-", root.name) else root.name


# -- running things ----------------------------------------------------------------


@dataclass
class Run:
    wall: float
    cpu: float  # user + system seconds of the process and its parse workers
    summary: dict[str, Any]
    peak_main_mb: float  # VmHWM of the index process
    peak_tree_mb: float  # sampled peak of it plus its children (parse workers)


def index_run(root: Path, data_dir: Path, embed: bool = False) -> Run:
    """`project-ledger index ROOT --json`, timed on the wall clock, its memory sampled every 50 ms."""
    command = [EXECUTABLE, "index", str(root), "--json", "--data-dir", str(data_dir), *(["--embed"] if embed else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), cwd=root)
    peak_main = peak_tree = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak_main, peak_tree
        while not stop.wait(0.05):
            total = status_mb(process.pid) + sum(status_mb(c) for c in children(process.pid))
            peak_main = max(peak_main, status_mb(process.pid, "VmHWM"))
            peak_tree = max(peak_tree, total)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{err.decode()[-2000:]}")
    return Run(wall, _cpu_since(before), json.loads(out), peak_main, peak_tree)


def _cpu_since(before: resource.struct_rusage) -> float:
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def ctags_run(root: Path, tags: Path, files: list[str] | None = None) -> tuple[float, float]:
    """Universal Ctags on the tree (`-R`), or on exactly `files` (`-L`); wall and CPU seconds."""
    if files is None:
        command = [CTAGS, "-R", "--output-format=json", "--fields=+nKz", "-f", str(tags), "."]
    else:
        listing = tags.with_suffix(".files")
        listing.write_text("\n".join(files) + "\n")
        command = [CTAGS, "--output-format=json", "--fields=+nKz", "-f", str(tags), "-L", str(listing)]
    tags.unlink(missing_ok=True)  # ctags refuses to overwrite a file it does not take for a tags file
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=root, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, _cpu_since(before)


def ctags_entries(tags: Path) -> list[dict[str, Any]]:
    entries = []
    with tags.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("_type") == "tag":
                entry["path"] = entry["path"].removeprefix("./")
                entries.append(entry)
    return entries


def indexed(data_dir: Path) -> tuple[dict[str, tuple[str, int]], list[tuple[str, str, int, str]]]:
    """What the index holds: files (path -> language, lines) and symbols (path, name, start_line, kind)."""
    db = sqlite3.connect(f"file:{data_dir / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        files = {row[0]: (row[1], row[2]) for row in db.execute("SELECT path, language, lines FROM code_files")}
        symbols = list(db.execute("SELECT path, name, start_line, kind FROM code_symbols"))
    finally:
        db.close()
    return files, symbols


# -- 1 and 6: index time and memory ----------------------------------------------------


@dataclass
class Timing:
    tree: Tree
    files: int
    loc: int
    symbols: int
    cold: float
    cold_cpu: float
    scan_seconds: float
    reindex: float
    ctags_r: float
    ctags_same: float
    ctags_cpu: float
    peak_main_mb: float
    peak_tree_mb: float
    data_dir: Path  # of the first cold run, kept for the recall checks
    tags: Path  # ctags -R output of the first run
    indexed_files: dict[str, tuple[str, int]] = field(default_factory=dict)
    symbol_rows: list[tuple[str, str, int, str]] = field(default_factory=list)


LOADS: list[float] = []  # the 1-minute load average as each full index run starts


def time_tree(tree: Tree, scratch: Path, runs: int) -> Timing:
    cold, cold_cpu, scans, again, ctags_r, ctags_same, ctags_cpu, peaks_main, peaks_tree = [], [], [], [], [], [], [], [], []
    first_dir = first_tags = None
    files: dict[str, tuple[str, int]] = {}
    symbols: list[tuple[str, str, int, str]] = []
    summary: dict[str, Any] = {}
    for n in range(runs):
        data_dir = scratch / f"{tree.root.name}-run{n}"
        shutil.rmtree(data_dir, ignore_errors=True)
        LOADS.append(common.load())
        run = index_run(tree.root, data_dir)
        summary = run.summary
        cold.append(run.wall)
        cold_cpu.append(run.cpu)
        scans.append(summary["seconds"])
        peaks_main.append(run.peak_main_mb)
        peaks_tree.append(run.peak_tree_mb)
        second = index_run(tree.root, data_dir)
        assert second.summary["parsed"] == 0, f"a no-change re-index parsed {second.summary['parsed']} files"
        again.append(second.wall)
        tags = scratch / f"{tree.root.name}-run{n}.tags.json"
        wall, cpu = ctags_run(tree.root, tags)
        ctags_r.append(wall)
        ctags_cpu.append(cpu)
        if n == 0:
            first_dir, first_tags = data_dir, tags
            files, symbols = indexed(data_dir)
        ctags_same.append(ctags_run(tree.root, scratch / f"{tree.root.name}-same.tags.json", sorted(files))[0])
        if n > 0:
            shutil.rmtree(data_dir, ignore_errors=True)
        log(
            f"{tree.name} run {n + 1}/{runs}: cold {run.wall:.1f}s (scan {summary['seconds']:.1f}s, CPU {run.cpu:.1f}s), "
            f"no-change {second.wall:.1f}s, ctags -R {ctags_r[-1]:.1f}s, ctags same files {ctags_same[-1]:.1f}s, "
            f"peak RSS {run.peak_main_mb:.0f} MB ({run.peak_tree_mb:.0f} MB with workers)"
        )
    assert first_dir is not None and first_tags is not None
    return Timing(
        tree=tree,
        files=len(files),
        loc=sum(lines for _, lines in files.values()),
        symbols=summary["symbols"],
        cold=statistics.median(cold),
        cold_cpu=statistics.median(cold_cpu),
        scan_seconds=statistics.median(scans),
        reindex=statistics.median(again),
        ctags_r=statistics.median(ctags_r),
        ctags_same=statistics.median(ctags_same),
        ctags_cpu=statistics.median(ctags_cpu),
        peak_main_mb=max(peaks_main),
        peak_tree_mb=max(peaks_tree),
        data_dir=first_dir,
        tags=first_tags,
        indexed_files=files,
        symbol_rows=symbols,
    )


# -- 2: recall against Python's ast --------------------------------------------------------


@dataclass
class Recall:
    expected: int
    found: int
    misses: Counter[str]
    examples: dict[str, list[str]]
    extra: int = 0  # ours, of the compared kinds, that the reference does not have
    note: str = ""

    @property
    def value(self) -> float:
        return self.found / self.expected if self.expected else float("nan")


def ast_definitions(source: bytes) -> list[tuple[str, int, str]]:
    """(name, line, category) of every def/class at any depth; the category says where it sits."""
    tree = ast.parse(source)
    found: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, inside: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parts = [inside]
                if isinstance(child, ast.AsyncFunctionDef):
                    parts.append("async")
                if child.decorator_list:
                    parts.append("decorated")
                found.append((child.name, child.lineno, ", ".join(parts)))
                visit(child, "in a function" if not isinstance(child, ast.ClassDef) else "in a class")
            else:  # defs under if/try/with/match keep the enclosing context
                visit(child, inside)

    visit(tree, "top level")
    return found


def python_recall(timing: Timing) -> Recall:
    ours_exact = {(p, n, line) for p, n, line, kind in timing.symbol_rows}
    ours_names = {(p, n) for p, n, _, _ in timing.symbol_rows}
    compared = {(p, n, line) for p, n, line, kind in timing.symbol_rows if kind in ("function", "method", "class")}
    files_with_symbols = {p for p, _, _, _ in timing.symbol_rows}
    expected = found = unparsable = 0
    reference: set[tuple[str, str, int]] = set()
    misses: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for path, (language, _) in sorted(timing.indexed_files.items()):
        if language != "python":
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                definitions = ast_definitions((timing.tree.root / path).read_bytes())
        except (SyntaxError, ValueError):
            unparsable += 1
            continue
        for name, line, category in definitions:
            expected += 1
            reference.add((path, name, line))
            if (path, name, line) in ours_exact:
                found += 1
                continue
            if path not in files_with_symbols:
                why = "file has no symbols at all"
            elif (path, name) in ours_names:
                why = "found on another line"
            else:
                why = category
            misses[why] += 1
            examples.setdefault(why, [])
            if len(examples[why]) < 3:
                examples[why].append(f"{path}:{line} {name}")
    note = f"{unparsable} files `ast` cannot parse left out" if unparsable else ""
    return Recall(expected, found, misses, examples, extra=len(compared - reference), note=note)


# -- 3: recall against ctags on Go and Rust ----------------------------------------------------


def ctags_recall(timing: Timing, language: str) -> Recall:
    ours = {(p, n, line) for p, n, line, _ in timing.symbol_rows}
    ours_names = {(p, n) for p, n, _, _ in timing.symbol_rows}
    kinds = CTAGS_KINDS[language]
    wanted = {
        (e["path"], e["name"], e["line"], e["kind"])
        for e in ctags_entries(timing.tags)
        if e.get("kind") in kinds and "line" in e and getattr(language_for(e["path"]), "name", None) == language
    }
    outside = {w for w in wanted if w[0] not in timing.indexed_files}
    wanted -= outside
    misses: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    found = 0
    for path, name, line, kind in sorted(wanted):
        if (path, name, line) in ours:
            found += 1
            continue
        why = f"{kind}, on another line" if (path, name) in ours_names else kind
        misses[why] += 1
        examples.setdefault(why, [])
        if len(examples[why]) < 3:
            examples[why].append(f"{path}:{line} {name}")
    reference = {(p, n, line) for p, n, line, _ in wanted}
    note = f"{len(outside)} ctags tags in files we do not index left out" if outside else ""
    return Recall(len(wanted), found, misses, examples, extra=len(ours - reference), note=note)


# -- 4: embedding ---------------------------------------------------------------------------


def embed_tree(tree: Tree, root: Path, data_dir: Path) -> dict[str, float]:
    """Index `root` (the CLI, fresh data dir), then run `index --embed`'s embedding loop in-process:
    the model load and the embedding are timed apart, on the wall clock and in CPU seconds."""
    from project_ledger.config import Settings
    from project_ledger.factory import open_ledger

    index_run(root, data_dir)
    ledger = open_ledger(Settings(root=root, data_dir=data_dir, watch=False), root)
    try:
        code = ledger.require_code()
        started = time.perf_counter()
        if not code.search.load_model():
            raise SystemExit("the embedding model did not load")
        loaded = time.perf_counter() - started
        pending = code.search.pending_vectors()
        texts = 0
        started, cpu = time.perf_counter(), time.process_time()
        while batch := code.search.embed_some():
            texts += batch
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert code.search.pending_vectors() == 0
    finally:
        ledger.close()
    log(
        f"embedding {tree.name}: {pending} symbols pending, {texts} distinct texts embedded in {seconds:.1f}s "
        f"({cpu:.1f} CPU s), model load {loaded:.1f}s"
    )
    return {"pending": pending, "texts": texts, "seconds": seconds, "cpu": cpu, "load": loaded}


# -- 5 and 6: a running server ---------------------------------------------------------------


def server_pid(data_dir: Path) -> int | None:
    for pid in children(os.getpid()):
        try:
            if str(data_dir) in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode():
                return pid
        except OSError:
            continue
    return None


def server_params(root: Path, data_dir: Path) -> StdioServerParameters:
    env = {key: os.environ[key] for key in ("HOME", "PATH") if key in os.environ}
    return StdioServerParameters(command=EXECUTABLE, args=["serve", "--root", str(root), "--data-dir", str(data_dir)], env=env, cwd=str(root))


async def code_status(session: ClientSession) -> dict[str, Any]:
    result = await session.call_tool("status", {})
    assert not result.is_error, result
    return result.structured_content["code"]


async def until_scanned(session: ClientSession, timeout: float) -> dict[str, Any]:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        code = await code_status(session)
        if code["indexing"] is None and code["last_scan"] is not None:
            return code
        await asyncio.sleep(0.1)
    raise SystemExit(f"the server's initial scan did not finish within {timeout:.0f}s")


async def edit_latency(tree: Tree, root: Path, data_dir: Path, probes: int) -> dict[str, Any]:
    """Serve `root` (a copy of the tree, indexed and embedded already); append new functions to its
    files and poll find_symbol until each shows."""
    targets = sorted(p for p in root.rglob("*.py") if "test" not in p.name and p.stat().st_size > 2000)[:20]
    rng = random.Random(7)
    token = f"{rng.randrange(16**6):06x}"
    result: dict[str, Any] = {}
    started = time.perf_counter()
    async with stdio_client(server_params(root, data_dir)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        code = await until_scanned(session, 600)
        result["scan_seen"] = time.perf_counter() - started
        result["pending"] = code["pending_vectors"]
        latencies, polls = [], []
        for n in range(probes):
            name = f"bench_probe_{token}_{n}"
            target = targets[n % len(targets)]
            with target.open("a", encoding="utf-8") as handle:
                handle.write(f"\n\ndef {name}(value):\n    return value + {n}\n")
            written = time.perf_counter()
            count = 0
            while True:
                count += 1
                found = await session.call_tool("find_symbol", {"name": name, "limit": 1})
                symbols = found.structured_content["symbols"] if not found.is_error else []
                if any(s["name"] == name for s in symbols):
                    latencies.append(time.perf_counter() - written)
                    polls.append(count)
                    break
                if time.perf_counter() - written > 30:
                    raise SystemExit(f"{name} written to {target} did not show within 30 s")
                await asyncio.sleep(POLL_SECONDS)
            await asyncio.sleep(rng.uniform(0.2, 0.5))  # edits apart, so each is its own watcher batch
        pid = server_pid(data_dir)
        result["rss_mb"] = status_mb(pid) if pid else float("nan")
    result.update(p50=percentile(latencies, 50), p95=percentile(latencies, 95), max=max(latencies), probes=len(latencies))
    log(
        f"edit-to-visible on {tree.name}: p50 {result['p50'] * 1000:.0f} ms, p95 {result['p95'] * 1000:.0f} ms, "
        f"max {result['max'] * 1000:.0f} ms over {len(latencies)} probes ({statistics.median(polls):.0f} polls median); "
        f"server ready {result['scan_seen']:.1f}s after spawn, {result['pending']} vectors pending then"
    )
    return result


async def serve_memory(tree: Tree, scratch: Path) -> dict[str, float]:
    """Resident memory of `serve` once its initial scan of the tree is done (the model is loaded by then, and embedding)."""
    data_dir = scratch / f"{tree.root.name}-serve-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    started = time.perf_counter()
    async with stdio_client(server_params(tree.root, data_dir)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        code = await until_scanned(session, 900)
        seen = time.perf_counter() - started
        pid = server_pid(data_dir)
        rss, hwm = (status_mb(pid), status_mb(pid, "VmHWM")) if pid else (0.0, 0.0)
    shutil.rmtree(data_dir, ignore_errors=True)
    result = {
        "rss_mb": rss,
        "hwm_mb": hwm,
        "scan_seconds": code["last_scan"]["seconds"],
        "seen": seen,
        "pending": code["pending_vectors"],
        "symbols": code["symbols"],
    }
    log(f"serve on {tree.name}: scan {result['scan_seconds']:.1f}s, RSS {result['rss_mb']:.0f} MB (peak {result['hwm_mb']:.0f} MB)")
    return result


# -- output ------------------------------------------------------------------------------------


def kloc(n: int) -> str:
    return f"{n / 1000:,.0f}k" if n >= 10_000 else f"{n:,}"


def recall_cell(recall: Recall, target: float) -> str:
    mark = "✓" if recall.value >= target else "✗"
    return f"{recall.value:.4f} ({recall.found:,} of {recall.expected:,}) {mark}"


def misses_line(label: str, recall: Recall) -> str:
    if not recall.misses:
        return ""
    parts = [f"{count} {why} (e.g. {'; '.join(recall.examples[why][:2])})" for why, count in recall.misses.most_common(6)]
    return f"- {label} misses: " + ", ".join(parts) + "."


def versions() -> str:
    from importlib.metadata import version

    ctags = subprocess.run([CTAGS, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    ctags = re.sub(r",.*", "", ctags)
    return f"tree-sitter {version('tree-sitter')}, {ctags}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the small tree only (rich), for development")
    parser.add_argument("--runs", type=int, default=3, help="index runs per tree to take the median of")
    parser.add_argument("--probes", type=int, default=PROBES, help="edits timed to visible in find_symbol")
    parser.add_argument("--work", type=Path, default=common.WORK, help="downloads and trees")
    parser.add_argument("--write", action="store_true", help="write the tables into README.md")
    args = parser.parse_args()
    if not Path(CTAGS).exists():
        raise SystemExit(f"Universal Ctags is needed at {CTAGS} (apt-get install universal-ctags)")
    began = time.perf_counter()
    # As an installed package is: with PYTHONDONTWRITEBYTECODE set, a checkout whose bytecode is missing or stale
    # compiles its modules again in every `index` process (about 70 ms of a no-change django re-index).
    compileall.compile_dir(Path(project_ledger.__file__).parent, quiet=1)
    work = args.work.expanduser().resolve()
    scratch = work / "runs"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)

    rich = sdist(work, RICH)
    if rich is None:
        raise SystemExit("the rich sdist is needed (pip download failed)")
    small = Tree(tree_label(rich), rich, "python", "medium")
    trees = [small]
    skipped: list[str] = []
    if not args.quick:
        django = sdist(work, DJANGO)
        if django is not None:
            trees.insert(0, Tree(tree_label(django), django, "python", "large"))
        else:
            skipped.append("django (download failed)")
        go = go_tree(work)
        if go is not None:
            trees.append(Tree(f"Go {go.name.split('-')[1]} std ({', '.join(GO_PACKAGES)})", go, "go", "medium"))
        else:
            skipped.append("Go (no /usr/share/go-1.*/src: apt-get install golang-1.19-src)")
        rust = rust_tree(work)
        if rust is not None:
            names = ", ".join(p.name for p in sorted(rust.iterdir()))
            trees.append(Tree(f"Rust crates ({names})", rust, "rust", "medium"))
        else:
            skipped.append("Rust (no /usr/share/cargo/registry: apt-get install librust-regex-dev ...)")
    large = trees[0]

    timings: list[Timing] = []
    for tree in trees:
        timings.append(time_tree(tree, scratch, args.runs))

    recalls: list[tuple[Timing, Recall, float]] = []
    for timing in timings:
        if timing.tree.language == "python":
            recall, target = python_recall(timing), 0.99
        else:
            recall, target = ctags_recall(timing, timing.tree.language), 0.95
        recalls.append((timing, recall, target))
        log(f"recall on {timing.tree.name}: {recall.value:.4f} ({recall.found}/{recall.expected}), misses {dict(recall.misses)}")

    copy, copy_data = scratch / f"{small.root.name}-copy", scratch / f"{small.root.name}-copy-data"
    shutil.copytree(small.root, copy, symlinks=True)  # copy2 keeps mtimes: the server's scan finds nothing changed
    embedding = embed_tree(small, copy, copy_data)
    edits = asyncio.run(edit_latency(small, copy, copy_data, args.probes))
    memory = asyncio.run(serve_memory(large, scratch))

    # -- tables --
    lines = [
        "| tree | files | lines | symbols | full index, cold (its scan) | files/s | lines/s | no-change re-index | "
        "ctags -R | × ctags | ctags on the same files | CPU s, ours / ctags |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in timings:
        lines.append(
            f"| {t.tree.name} | {t.files:,} | {kloc(t.loc)} | {t.symbols:,} | {t.cold:.1f} s ({t.scan_seconds:.1f} s) | "
            f"{t.files / t.cold:,.0f} | {t.loc / t.cold:,.0f} | {t.reindex:.1f} s | {t.ctags_r:.1f} s | {t.cold / t.ctags_r:.1f}× | "
            f"{t.ctags_same:.1f} s | {t.cold_cpu:.1f} / {t.ctags_cpu:.1f} |"
        )
    worst = max(t.cold / t.ctags_r for t in timings)
    rows: list[tuple[str, str, str]] = []
    for t in timings:
        target = RATIO_TARGETS.get(t.tree.size if t.tree.language == "python" else t.tree.language, "")
        ratio = f"{t.cold / t.ctags_r:.1f}× ({t.cold:.1f} s vs {t.ctags_r:.1f} s)"
        rows.append((f"full index time / ctags time, {t.tree.name}", ratio, target))
    rows += [(f"no-change re-index, {t.tree.name}", f"{t.reindex:.2f} s", "≤ 0.5 s") for t in timings if t.tree.size == "large"]
    for timing, recall, target in recalls:
        what = "Python `ast` definitions" if timing.tree.language == "python" else f"ctags {'/'.join(sorted(CTAGS_KINDS[timing.tree.language]))}"
        rows.append((f"definition recall vs {what}, {timing.tree.name}", recall_cell(recall, target), f"≥ {target}"))
    rows += [
        (
            f"dense embedding of the symbols, {small.name} ({embedding['pending']:,} symbols, {embedding['texts']:,} distinct texts; "
            f"`index --embed`'s loop in-process, model load of {embedding['load']:.1f} s apart)",
            f"{embedding['seconds']:.1f} s = {embedding['pending'] / embedding['seconds']:.0f} symbols/s "
            f"({embedding['cpu']:.0f} CPU s = {embedding['pending'] / embedding['cpu']:.0f} symbols per CPU s)",
            "",
        ),
        (
            f"edit to visible in `find_symbol`, p50 / p95 ({edits['probes']} edits appending a function to one of 20 files of "
            f"{small.name}; `serve` over stdio on an index already embedded; polled every {POLL_SECONDS * 1000:.0f} ms)",
            f"{edits['p50'] * 1000:.0f} ms / {edits['p95'] * 1000:.0f} ms (max {edits['max'] * 1000:.0f} ms)",
            "p95 < 1 s",
        ),
        (
            f"peak memory of `project-ledger index`, {large.name}",
            f"{timings[0].peak_main_mb:.0f} MB (with its parse workers: {timings[0].peak_tree_mb:.0f} MB)",
            "",
        ),
        (
            f"`serve` resident memory after its initial scan of {large.name} ({memory['scan_seconds']:.0f} s; model loaded, embedding under way)",
            f"{memory['rss_mb']:.0f} MB (peak {memory['hwm_mb']:.0f} MB)",
            "",
        ),
    ]
    lines += ["", "| measure | result | target |", "|---|---|---|", *(f"| {a} | {b} | {c} |" for a, b, c in rows)]
    notes = [misses_line(f"{timing.tree.name}", recall) for timing, recall, _ in recalls]
    notes += [f"- {timing.tree.name}: {recall.note}." for timing, recall, _ in recalls if recall.note]
    notes += [f"- skipped: {item}." for item in skipped]
    lines += [
        "",
        f"Index times are wall-clock medians of {args.runs} runs of `project-ledger index --json` (a fresh data dir each; "
        "process start included), ctags timed in the same runs. Lines are the indexed files' lines. "
        f"Worst ratio to ctags: {worst:.1f}×.",
        *[n for n in notes if n],
        "",
        f"{versions()}; {(time.perf_counter() - began) / 60:.0f} min; loads read as each index run started.",
    ]
    shutil.rmtree(scratch, ignore_errors=True)
    command = f"python benchmarks/code_index.py{' --quick' if args.quick else ''}"
    common.publish("code-index", "\n".join(lines), args.write, command=command, loads=LOADS)


if __name__ == "__main__":
    main()
