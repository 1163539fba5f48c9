"""The code index as the tools see it: find_symbol, search_code, find_references, repo_map, status.

Knows nothing about MCP. Indexing runs in the background (`start`): a full
scan, then the watcher's updates; every answer given while a scan runs says
how far it has got.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from project_ledger.code.indexer import CodeIndexer
from project_ledger.code.languages import BY_NAME
from project_ledger.code.links import CodeAnchors, project_path
from project_ledger.code.search import CodeSearch
from project_ledger.code.store import EXACT_NAME, CodeStore, StoredSymbol, like_escape, qualname_ends, qualname_in, scope
from project_ledger.code.symbols import KINDS
from project_ledger.code.watch_state import WatchReport, read_watch_state
from project_ledger.code.watcher import CodeWatcher, WatcherState
from project_ledger.errors import InvalidArgument, StorageError
from project_ledger.models import (
    CodeHit,
    CodeStatus,
    CodeSymbol,
    FindSymbolResult,
    RecallMode,
    ReferenceSite,
    ReferencesResult,
    RepoMapResult,
    ScanStatus,
    SearchCodeResult,
    SymbolMatch,
)
from project_ledger.search.tuning import CODE_FUSION
from project_ledger.text.tokens import TokenCounter

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 300
MAX_FOCUS = 50
CONTEXT_CHARS = 200


def _symbol(s: StoredSymbol) -> CodeSymbol:
    return CodeSymbol(
        name=s.name, qualname=s.qualname, kind=s.kind, language=s.language, path=s.path,
        start_line=s.start_line, end_line=s.end_line, signature=s.signature, doc=s.doc, parent=s.parent,
    )  # fmt: skip


def render_symbol(symbol: CodeSymbol) -> str:
    head = f"{symbol.path}:{symbol.start_line}-{symbol.end_line} {symbol.kind} {symbol.qualname}\n  {symbol.signature}"
    doc = symbol.doc.split("\n\n", 1)[0].replace("\n", " ")
    return head + (f"\n  {doc[:300]}" if doc else "")


class CodeService:
    def __init__(
        self,
        *,
        root: Path,
        store: CodeStore,
        indexer: CodeIndexer,
        search: CodeSearch,
        tokens: TokenCounter,
        watch: bool,
        watch_state: Path | None = None,
        max_result_tokens: int = 25_000,
    ) -> None:
        """`watch_state`: where a running watcher says what it does, for other processes (`watch_state.py`)."""
        self.root = root
        self.max_result_tokens = max_result_tokens  # the largest repo map (LEDGER_MAX_RESULT_TOKENS)
        self.store = store
        self.indexer = indexer
        self.search = search
        self.tokens = tokens
        self.watch_state = watch_state
        self.watcher = CodeWatcher(root, indexer, state_file=watch_state) if watch else None
        self._map_cache: tuple[tuple[object, ...], RepoMapResult] | None = None
        self._scan_thread: threading.Thread | None = None
        self._start_expected = False
        indexer.on_change = search.kick

    # -- lifecycle ---------------------------------------------------------------

    def expect_start(self) -> None:
        """A server will call `start` once its client has said hello: its watcher is `starting` until then, not `off`."""
        self._start_expected = True

    def start(self) -> None:
        """Everything in the background, so the handshake is not kept waiting (adding inotify watches
        walks the whole tree): the watcher first, so no edit during the scan is missed, then the scan."""
        self._scan_thread = threading.Thread(target=self._start_and_scan, name="ledger-code-scan", daemon=True)
        self._scan_thread.start()

    def _start_and_scan(self) -> None:
        self.search.start()
        if self.watcher is not None:
            self.watcher.start()
        try:
            self.indexer.scan()
            self.store.release_cache()
        except Exception:
            if not self.indexer.cancelled.is_set():
                log.exception("code scan failed")

    def scanning(self) -> bool:
        """Whether a full scan is running (until the first one ends, a symbol not found yet is not "gone")."""
        return self.indexer.progress.running

    def search_open(self) -> bool:
        """Whether the symbol index is open: a caller that must not wait for it (a context pack) asks first."""
        return self.search.is_open

    def anchors(self) -> CodeAnchors:
        """Memories' links to this project's code, resolved and compared against this index."""
        return CodeAnchors(self.root, self.store, self.scanning)

    def watch_until_interrupted(self, report: Callable[[str], None]) -> None:
        """The CLI's `index --watch`: follow edits in the foreground until Ctrl-C."""
        watcher = CodeWatcher(self.root, self.indexer, report=report, state_file=self.watch_state)
        watcher.start()
        if watcher.state != "running":
            raise StorageError("the file watcher could not start (see the log above)")
        report(f"watching {self.root} (Ctrl-C stops)")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            watcher.stop()

    def close(self) -> None:
        """Stop a scan in progress at its next batch, then the watcher and the search worker."""
        self.indexer.cancelled.set()
        if self._scan_thread is not None:
            self._scan_thread.join(timeout=30)
        if self.watcher is not None:
            self.watcher.stop()
        self.search.stop()
        self.store.close()

    # -- validation ----------------------------------------------------------------

    @staticmethod
    def _name(value: str, what: str = "name") -> str:
        value = value.strip()
        if not value:
            raise InvalidArgument(f"{what} must not be empty")
        if len(value) > MAX_NAME_CHARS:
            raise InvalidArgument(f"{what} is {len(value)} characters; the limit is {MAX_NAME_CHARS}")
        return value

    def _path(self, value: str | None) -> str | None:
        """A file or directory relative to the project root; nothing outside it."""
        if value is None or not value.strip() or value.strip() in (".", "./"):
            return None
        return project_path(self.root, value)

    @staticmethod
    def _kind(value: str | None) -> str | None:
        if value is None:
            return None
        if value not in KINDS:
            raise InvalidArgument(f"unknown kind {value!r}; use one of: {', '.join(KINDS)}")
        return value

    @staticmethod
    def _language(value: str | None) -> str | None:
        if value is None:
            return None
        if value not in BY_NAME:
            raise InvalidArgument(f"unknown language {value!r}; use one of: {', '.join(BY_NAME)}")
        return value

    @staticmethod
    def _limit(value: int, what: str, high: int) -> int:
        if not 1 <= value <= high:
            raise InvalidArgument(f"{what} must be between 1 and {high}")
        return value

    # -- tools ---------------------------------------------------------------------

    def find_symbol(
        self, name: str, *, kind: str | None = None, language: str | None = None, path: str | None = None, limit: int = 20
    ) -> FindSymbolResult:
        """Exact name, then exact qualified name (any separator), then a qualified-name suffix,
        then case-insensitive, then prefix: the first rule that finds anything answers."""
        name = self._name(name)
        limit = self._limit(limit, "limit", 200)
        filters, params = scope(self._language(language), self._path(path))
        if (kind := self._kind(kind)) is not None:
            filters.append("kind = ?")
            params.append(kind)
        spellings = sorted({name, name.replace("::", "."), name.replace(".", "::"), name.replace("#", ".")})
        ladder: list[tuple[SymbolMatch, str, list[object]]] = [
            ("exact name", EXACT_NAME, [name, name]),
            ("exact qualified name", *qualname_in(spellings)),
            ("qualified name suffix", *qualname_ends(spellings)),
            ("case-insensitive", "(name = ? COLLATE NOCASE OR qualname = ? COLLATE NOCASE)", [name, name]),
            ("prefix", "name LIKE ? ESCAPE '\\'", [like_escape(name) + "%"]),
        ]
        for rule, condition, values in ladder:
            where = " AND ".join([f"({condition})", *filters])
            found = self.store.symbols(where, [*values, *params], limit)
            if found:
                total = len(found) if len(found) < limit else self.store.count_symbols(where, [*values, *params])
                return FindSymbolResult(
                    symbols=[_symbol(s) for s in found], matched_by=rule, total=total, truncated=total > len(found),
                    note=self.indexer.progress.note(),
                )  # fmt: skip
        narrowed = " with these filters" if filters else ""
        hint = f"no definition is named {name!r}{narrowed}; search_code finds symbols by what they do or by words in their names"
        note = "; ".join(filter(None, [hint, self.indexer.progress.note()]))
        return FindSymbolResult(symbols=[], matched_by="none", total=0, truncated=False, note=note)

    def search_code(self, query: str, k: int = 10, *, language: str | None = None, path: str | None = None) -> SearchCodeResult:
        query = self._name(query, "query")
        k = self._limit(k, "k", 100)
        hits = self.search.search(query, language=self._language(language), path=self._path(path), k=k, fusion=CODE_FUSION)
        results = [
            CodeHit(**_symbol(symbol).model_dump(), score=round(score, 6), relevance=round(relevance, 4))
            for symbol, score, relevance in hits
        ]
        pending = self.search.pending_vectors()
        notes = [note] if (note := self.indexer.progress.note()) else []
        mode: RecallMode = "hybrid"
        if not self.search.embedder_ready():
            mode = "bm25-only"
            if failure := self.search.embedder_failure():
                notes.append(f"the code model could not be loaded ({failure}): ranked on exact words (BM25) only")
            else:
                notes.append("the embedding model is not loaded yet: ranked on exact words (BM25) only")
        elif pending:
            notes.append(f"{pending} symbols are not embedded yet: those are found by exact words (BM25) only")
        return SearchCodeResult(results=results, mode=mode, note="; ".join(notes) or None)

    def find_references(self, name: str, path: str | None = None, limit: int = 50) -> ReferencesResult:
        name = self._name(name)
        limit = self._limit(limit, "limit", 500)
        bare = name.replace("::", ".").rsplit(".", 1)[-1]  # references are recorded by bare name
        found = self.store.references(bare, self._path(path), limit + 1)
        lines: dict[str, list[str]] = {}
        sites = [
            ReferenceSite(name=r.name, path=r.path, line=r.line, kind=r.kind, context=self._line(lines, r.path, r.line))
            for r in found[:limit]
        ]
        definitions = len(self.store.symbols(EXACT_NAME, [bare, bare], 1000))
        note = self.indexer.progress.note()
        if bare != name:
            note = "; ".join(filter(None, [f"references are recorded by bare name: showing uses of {bare!r}", note]))
        return ReferencesResult(references=sites, definitions=definitions, truncated=len(found) > limit, note=note)

    def _line(self, cache: dict[str, list[str]], path: str, line: int) -> str:
        if path not in cache:
            try:
                cache[path] = (self.root / path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                cache[path] = []
        text = cache[path][line - 1].strip() if 0 < line <= len(cache[path]) else ""
        return text[:CONTEXT_CHARS]

    def repo_map(self, token_budget: int = 1024, focus: list[str] | None = None) -> RepoMapResult:
        if not 1 <= token_budget <= self.max_result_tokens:
            raise InvalidArgument(
                f"token_budget={token_budget} is out of range: give 1 to {self.max_result_tokens} (LEDGER_MAX_RESULT_TOKENS)"
            )
        focus = focus or []
        if len(focus) > MAX_FOCUS:
            raise InvalidArgument(f"focus has {len(focus)} entries; the limit is {MAX_FOCUS}")
        files, names = set(), set()
        known_files = set(self.store.files())
        for item in focus:
            item = self._name(item, "focus entry")
            rel = self._path(item) if ("/" in item or "." in item.rsplit("/", 1)[-1]) else None
            if rel is not None and (rel in known_files or any(f.startswith(rel.rstrip("/") + "/") for f in known_files)):
                files.add(rel)
            else:
                names.add(item.replace("::", ".").rsplit(".", 1)[-1])
        key = (self.store.tree_rev(), token_budget, tuple(sorted(files)), tuple(sorted(names)))
        if self._map_cache is not None and self._map_cache[0] == key:
            return self._map_cache[1]
        from project_ledger.code.repo_map import MapDefinition, MapUse, build_repo_map

        definitions, uses = self.store.graph_rows()
        result = build_repo_map(
            [MapDefinition(*row) for row in definitions],
            [MapUse(*row) for row in uses],
            token_budget,
            self.tokens.count,
            focus_files=files,
            focus_names=names,
        )
        answer = RepoMapResult(
            text=result.text,
            tokens=result.tokens,
            files=result.files,
            definitions=result.definitions,
            total_definitions=result.total_definitions,
            note=self.indexer.progress.note(),
        )
        self._map_cache = (key, answer)
        return answer

    def watching_process(self) -> WatchReport | None:
        """What the file watcher of a running process on this project (a server) reports, if one runs."""
        return read_watch_state(self.watch_state) if self.watch_state is not None else None

    def _watcher_state(self) -> WatcherState | Literal["starting"]:
        """This process's watcher: off in one that never starts it (the CLI), starting until its first try is over."""
        if self.watcher is None or (self._scan_thread is None and not self._start_expected):
            return "off"
        if self._scan_thread is None:
            return "starting"
        return self.watcher.state if self.watcher.attempted else "starting"

    def status(self) -> CodeStatus:
        counts = self.store.counts()
        progress = self.indexer.progress
        last = progress.last
        return CodeStatus(
            files=counts.files,
            symbols=counts.symbols,
            references=counts.references,
            languages=counts.languages,
            indexing=progress.note(),
            last_scan=ScanStatus(
                files=last.files, parsed=last.parsed, unchanged=last.unchanged, removed=last.removed,
                seconds=round(last.seconds, 3), skipped=last.skipped.counts,
            ) if last else None,
            watcher=self._watcher_state(),
            rescan=self.watcher.rescan_note() if self.watcher is not None else None,
            pending_vectors=self.search.pending_vectors(),
            search_lag=self.search.lag(),
            error=progress.last_error or self.search.error,
        )

