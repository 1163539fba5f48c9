"""`project-ledger doctor`: check what the ledger depends on, and repair what can be repaired without a choice to make.

Each check gives one finding. A repair is only made with `fix`, and only when
it cannot lose anything: the index, vectors and code index are derived data,
and tightening the data directory's permissions takes nothing away. A damaged
journal is reported, never rewritten: that choice stays with its owner.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from project_ledger.code.source_files import SKIPPED_DIRS
from project_ledger.code.watch_state import WatchReport
from project_ledger.config import ProjectPaths
from project_ledger.errors import JournalDamaged, LedgerError
from project_ledger.hooks.clients import HOOK_CLIENTS
from project_ledger.hooks.log import read_runs
from project_ledger.maintenance.service import MaintenanceService
from project_ledger.memory.project_context import ProjectContextFile, placeholder_count

State = Literal["ok", "fixed", "warning", "problem", "skipped"]
INOTIFY_LIMIT = Path("/proc/sys/fs/inotify/max_user_watches")


@dataclass(frozen=True)
class Finding:
    check: str
    state: State
    detail: str


def examine(maintenance: MaintenanceService, fix: bool) -> list[Finding]:
    """Every check, in the order a repair depends on: storage first, then what is derived from it."""
    journal = _journal(maintenance)
    findings = [_permissions(maintenance, fix), _disk(maintenance), journal, _model(maintenance)]
    derived = ["index", "vectors", *(["code index"] if maintenance.has_code else [])]
    if journal.state == "problem":  # the code index's tables are in the journal's file too
        findings += [Finding(check, "skipped", "derived from the journal, which must be sound first") for check in derived]
    else:
        findings += [_index(maintenance, fix), _vectors(maintenance, fix)]
        findings += [_code_index(maintenance, fix)] if maintenance.has_code else []
    if maintenance.has_code:
        findings += [_watcher(maintenance)]
    return [*findings, _context(maintenance.paths.project_context), _hooks(maintenance.paths.root, maintenance.paths.data_dir)]


def _context(path: Path) -> Finding:
    """project_context.md opens every session: missing or still the template, it tells an agent nothing."""
    text = ProjectContextFile(path).read()
    if text is None:
        return Finding("context", "warning", f"{path} is missing: `project-ledger init` drafts one for you to finish")
    if placeholders := placeholder_count(text):
        detail = f"{path} still has {placeholders} of the template's placeholders, left out of every session: edit it"
        return Finding("context", "warning", detail)
    return Finding("context", "ok", f"{path} is filled in")


def _hooks(root: Path, data_dir: Path) -> Finding:
    """Whether a client's hooks file runs the ledger's hook on each of the client's events, and how its last run
    went."""
    where: list[str] = []  # every client's files that run the hook
    for client in HOOK_CLIENTS.values():
        events: set[str] = set()
        ours: list[str] = []  # this client's
        for path in client.config_files(root):
            try:
                found = client.hooked_events(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):  # absent, or not JSON: not ours to judge
                continue
            events |= found
            ours.extend([str(path)] if found else [])
        where += ours
        if events and (missing := [event for event in client.events if event not in events]):
            detail = f"installed in {', '.join(ours)} but not for {', '.join(missing)}; rerun `config {client.name} --hooks --write`"
            return Finding("hooks", "warning", detail)
    if not where:
        return Finding("hooks", "skipped", f"no client's hooks are installed; `project-ledger config CLIENT --hooks --write` "
                       f"({', '.join(HOOK_CLIENTS)}) records the conversation and, where the client lets it, injects "
                       "relevant memories")  # fmt: skip
    runs = read_runs(data_dir)
    if not runs:
        return Finding("hooks", "ok", f"installed in {', '.join(where)}; no run yet")
    last = runs[-1]
    when = f"{last.at:%Y-%m-%d %H:%M:%S} UTC " if last.at is not None else ""
    if last.state == "error":
        detail = f"installed in {', '.join(where)}; the last run failed (the session went on): {when}{last.line()}"
        return Finding("hooks", "warning", detail)
    return Finding("hooks", "ok", f"installed in {', '.join(where)}; last run: {when}{last.line()}")


def _permissions(maintenance: MaintenanceService, fix: bool) -> Finding:
    data_dir = maintenance.paths.data_dir
    probe = data_dir / f".doctor-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        probe.unlink()
    except OSError as exc:
        return Finding("permissions", "problem", f"{data_dir} is not writable ({exc.strerror}); nothing can be stored until it is")
    mode = stat.S_IMODE(data_dir.stat().st_mode)
    if not mode & 0o077:
        return Finding("permissions", "ok", f"{data_dir} is writable and private ({mode:o})")
    detail = f"{data_dir} is open to other users ({mode:o}): they can read every memory"
    if not fix:
        return Finding("permissions", "warning", detail + "; --fix makes it 700")
    data_dir.chmod(0o700)
    return Finding("permissions", "fixed", detail + "; made it 700")


def _disk(maintenance: MaintenanceService) -> Finding:
    """Free space against what the embedded index needs to load and write its shard (see the README's "Low disk
    space" for what happens at each level)."""
    free = shutil.disk_usage(maintenance.paths.data_dir).free
    needed = maintenance.index_room_needed()
    detail = f"{free / 2**20:,.0f} MB free where the data directory is"
    if needed is None:
        return Finding("disk", "ok", detail)
    detail += f"; the embedded index needs {needed / 2**20:,.0f} MB to load and write its shard"
    if free < needed:
        return Finding(
            "disk", "warning", f"{detail}, so it is held in memory until there is room (searches go on, complete); the "
            "journal takes writes until the disk is full, then refuses them with a clear error; nothing stored is lost",
        )
    return Finding("disk", "ok", detail)


def _journal(maintenance: MaintenanceService) -> Finding:
    try:
        problems = maintenance.journal_problems()
        counts = None if problems else maintenance.counts()
    except JournalDamaged as exc:
        return damaged_journal(maintenance.paths, exc)
    except LedgerError as exc:  # it says what to do
        return Finding("journal", "problem", str(exc))
    if counts is None:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        return Finding("journal", "problem", f"{shown}. {salvage_advice(maintenance.paths.journal, maintenance.paths.data_dir)}")
    live = sum(counts.by_kind.values()) + counts.superseded
    return Finding("journal", "ok", f"integrity check passed; {live} memories, {counts.forgotten} tombstones")


def damaged_journal(paths: ProjectPaths, exc: JournalDamaged) -> Finding:
    """The finding for a journal too damaged to open or read through; the CLI's `doctor` reports it alone when the
    journal cannot even be opened."""
    return Finding("journal", "problem", f"{paths.journal} is damaged ({exc.cause}). {salvage_advice(paths.journal, paths.data_dir)}")


def salvage_advice(journal: Path, data_dir: Path) -> str:
    """The procedure that saves what a damaged journal still holds, as commands to run (the tests run them)."""
    rescued, journal_arg, data_arg = "rescued.jsonl", shlex.quote(str(journal)), shlex.quote(str(data_dir))
    return (
        "Memories stored in its damaged parts may be lost. With no server running for this project: "
        f"`project-ledger salvage --journal {journal_arg} {rescued}` writes every memory that can still be read and says "
        f"what could not; `mv {data_arg} {shlex.quote(str(data_dir) + '-damaged')}` keeps the damaged files; "
        f"`project-ledger import --data-dir {data_arg} {rescued}` puts the memories in a fresh data directory (the index, "
        "vectors and code index are rebuilt there)"
    )


def _model(maintenance: MaintenanceService) -> Finding:
    loaded = maintenance.load_model()
    model = maintenance.model_status()
    if loaded:
        return Finding("model", "ok", f"{model.model} loads")
    return Finding("model", "problem", f"{model.model}: {model.detail}; recall falls back to exact words (BM25) until it loads")


def _index(maintenance: MaintenanceService, fix: bool) -> Finding:
    """Opening the index already checks it against the journal and rebuilds a damaged one; say what that found."""
    try:
        maintenance.open_index()
    except LedgerError as exc:
        if not fix:
            return Finding("index", "problem", f"{exc}; --fix rebuilds it from the journal")
        return Finding("index", "fixed", f"{exc}; rebuilt from the journal: {maintenance.rebuild_index()} memories")
    figures = maintenance.index_figures(timeout=60)
    rev, expected = maintenance.journal_figures()
    if figures is not None and figures != (rev, expected):
        watermark, points = figures
        detail = f"index holds {points} memories at revision {watermark}; the journal has {expected} at {rev}"
        if not fix:
            return Finding("index", "problem", detail + "; --fix rebuilds it")
        return Finding("index", "fixed", f"{detail}; rebuilt: {maintenance.rebuild_index()} memories")
    if maintenance.index_held_in_memory():
        return Finding("index", "warning", f"{expected} memories, held in memory: the disk has no room to write the index (see disk)")
    events = "; ".join(maintenance.index_events())
    if events:
        return Finding("index", "fixed", f"{events}; now {expected} memories, in step with the journal")
    return Finding("index", "ok", f"{expected} memories, in step with the journal")


def _vectors(maintenance: MaintenanceService, fix: bool) -> Finding:
    missing = maintenance.missing_vectors()
    if not missing:
        return Finding("vectors", "ok", "every memory has its vector")
    detail = f"{missing} memories have no vector yet (a running server computes them in the background)"
    if not fix or maintenance.model_status().state != "ready":
        return Finding("vectors", "warning", detail + ("; --fix computes them now" if not fix else ""))
    maintenance.embed_memories()
    maintenance.catch_up_index()
    return Finding("vectors", "fixed", detail + "; computed them")


def _code_index(maintenance: MaintenanceService, fix: bool) -> Finding:
    changed, gone = maintenance.code_out_of_date()
    if not changed and not gone:
        return _symbol_vectors(maintenance, fix, f"{maintenance.code_counts().files} files, in step with the source tree")
    detail = f"since the last index, source files new or changed: {changed}, deleted: {gone}"
    if not fix:
        return Finding("code index", "warning", f"{detail} ({catching_up(maintenance.code_watcher())}); --fix indexes them now")
    summary = maintenance.scan_code()
    return _symbol_vectors(maintenance, fix, f"{detail}; indexed: {summary.parsed} parsed, {summary.removed} removed", "fixed")


def catching_up(watching: WatchReport | None) -> str:
    """Who brings changed files into the code index if nothing is done: the process whose watcher follows the tree
    (read from the state it publishes), or else the next server, as it starts."""
    if watching is None:
        return "no running server watches this tree: the next `serve` indexes them as it starts"
    if watching.state == "rescanning" and watching.rescan:
        return f"{_watching(watching)} is {watching.rescan}"
    return f"{_watching(watching)} re-indexes changes as they come; if these stay listed, its watcher missed them"


def _watching(report: WatchReport) -> str:
    return f"the process watching the tree (pid {report.pid})" if report.pid else "a process watching the tree"


def _symbol_vectors(maintenance: MaintenanceService, fix: bool, detail: str, state: State = "ok") -> Finding:
    """Symbols without a vector are found by their words only: say so, and with `fix` compute them."""
    missing = maintenance.missing_symbol_vectors()
    if not missing:
        return Finding("code index", state, detail)
    detail += f"; {missing} symbols have no vector yet (a running server computes them in the background)"
    if not fix or maintenance.model_status().state != "ready":
        hint = "; --fix, or `project-ledger index --embed`, computes them now" if not fix else ""
        return Finding("code index", "warning", detail + hint)
    maintenance.embed_symbols()
    return Finding("code index", "fixed", detail + "; computed them")


def _watcher(maintenance: MaintenanceService) -> Finding:
    """Start a watcher on the tree, as a server does, and compare the directories it watches with the inotify limit."""
    if not maintenance.watching:
        return Finding("watcher", "ok", "off (LEDGER_WATCH=false): the code index updates at start or with `project-ledger index`")
    root = maintenance.paths.root
    directories = 1 + sum(
        1 + sum(len(dirs) for _, dirs, _ in os.walk(entry))
        for entry in root.iterdir()
        if entry.name not in SKIPPED_DIRS and entry.is_dir() and not entry.is_symlink()
    )
    running = maintenance.watcher_starts()
    limit = int(INOTIFY_LIMIT.read_text()) if INOTIFY_LIMIT.exists() else None
    counted = f"{directories} directories to watch" + (f", inotify allows {limit} per user" if limit else "")
    if not running:
        return Finding(
            "watcher", "problem", f"the file watcher could not start ({counted}); raise fs.inotify.max_user_watches or set LEDGER_WATCH=false"
        )
    if (watching := maintenance.code_watcher()) is not None and watching.rescan:
        counted += f"; {_watching(watching)}: {watching.rescan}"
    if limit and directories > limit // 2:
        return Finding("watcher", "warning", f"starts, but {counted}: other programs' watches may exhaust it")
    return Finding("watcher", "ok", f"starts; {counted}")
