"""Which files under a project root are source to index, and why the others are not.

Ignore rules follow git: `.gitignore` in every directory (patterns relative to
it, deeper files overriding shallower ones), `.git/info/exclude`, and a
`.ledgerignore` with the same syntax that wins over both. An ignored directory
is not entered. Symlinks are never followed, as git does not follow them:
that keeps the walk inside the root and immune to loops.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from project_ledger.code.languages import LanguageSpec, language_for

if TYPE_CHECKING:
    import pathspec

# Tools' own folders: never source, not worth reporting.
TOOL_DIRS = frozenset(
    {".git", ".hg", ".svn", ".ledger", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".idea", ".vscode"}
)
# Vendored or generated trees, skipped wherever they appear, and reported.
VENDORED_DIRS = frozenset(
    {
        ".venv", "venv", ".tox", ".nox", "node_modules", "bower_components", "dist", "build", "target", "vendor",
        "site-packages", ".next", ".nuxt", ".gradle", "coverage", ".eggs",
    }
)  # fmt: skip
SKIPPED_DIRS = TOOL_DIRS | VENDORED_DIRS
# Where tests live, by convention: folders, .NET test projects (`App.Tests`, `App.UnitTests`), and file names
# (`test_x.py`, `x_test.go`, `x.test.ts`, `XTest.java`).
TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs"})
_TEST_PROJECT = re.compile(r"\.(?:(?:[A-Z]\w*)?Tests?|tests?)$")  # App.Tests, App.UnitTests, app.tests
_TEST_FILE = re.compile(r"^(tests?|test_.*|.*_tests?|conftest|.*[a-z0-9]Tests?)$|\.(test|spec)$")
IGNORE_FILES = (".gitignore", ".ledgerignore")
SNIFF_BYTES = 8192
MINIFIED_LINE_CHARS = 500  # an average line this long in the first bytes means generated code


def is_test_file(path: str) -> bool:
    """Whether the file at `path` (relative, `/`-separated) holds tests, by the usual names of test folders and files."""
    *folders, file = path.split("/")
    return any(folder.lower() in TEST_DIRS or _TEST_PROJECT.search(folder) for folder in folders) or bool(
        _TEST_FILE.search(file.rsplit(".", 1)[0])
    )


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative to the root, with forward slashes
    language: LanguageSpec
    size: int
    mtime_ns: int


@dataclass
class Skipped:
    """Files left out, by reason, with a few examples of each."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, path: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        examples = self.examples.setdefault(reason, [])
        if len(examples) < 3:
            examples.append(path)


class IgnoreRules:
    """The gitignore-style rules in force under one root, loaded per directory as the walk reaches it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._specs: dict[str, list[pathspec.PathSpec]] = {}
        self._chains: dict[str, list[tuple[pathspec.PathSpec, int]]] = {}

    @functools.cached_property
    def _base(self) -> pathspec.PathSpec | None:
        """`.git/info/exclude`, read when the first path is judged; None when it is missing or has no patterns.
        pathspec costs about 20 ms to import, and only a tree with ignore files needs it."""
        exclude = self.root / ".git" / "info" / "exclude"
        if not exclude.is_file():
            return None
        import pathspec

        spec = pathspec.GitIgnoreSpec.from_lines(_lines(exclude))
        return spec if spec.patterns else None

    def _dir_specs(self, rel_dir: str) -> list[pathspec.PathSpec]:
        specs = self._specs.get(rel_dir)
        if specs is None:
            directory = os.path.join(self.root, rel_dir)  # plain strings: this runs once per directory of the tree
            specs = self._specs[rel_dir] = _load([os.path.join(directory, name) for name in IGNORE_FILES])
        return specs

    def listed(self, rel_dir: str, entries: list[os.DirEntry[str]]) -> None:
        """The walk has listed `rel_dir`: its ignore files are read from the listing, with no stat per name."""
        if rel_dir not in self._specs:
            present = {entry.name: entry.path for entry in entries if entry.name in IGNORE_FILES and entry.is_file()}
            self._specs[rel_dir] = _load([present[name] for name in IGNORE_FILES if name in present], exist=True)

    def _chain(self, rel_dir: str) -> list[tuple[pathspec.PathSpec, int]]:
        """The ignore files' specs that judge the entries of `rel_dir`, shallow to deep, each with the number of
        path parts above the directory holding it: worked out once per directory, not per path."""
        chain = self._chains.get(rel_dir)
        if chain is None:
            parent, _, _ = rel_dir.rpartition("/")
            above = self._chain(parent) if rel_dir else []
            depth = rel_dir.count("/") + 1 if rel_dir else 0
            chain = self._chains[rel_dir] = above + [(spec, depth) for spec in self._dir_specs(rel_dir)]
        return chain

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Whether git (and .ledgerignore) would ignore this path, judged by its own rules only, not its parents'.

        `rel_path` is normalised (forward slashes, no empty or dot parts), as the walk and `excluded` make it."""
        chain = self._chain(rel_path.rpartition("/")[0])
        base = self._base
        if not chain and base is None:
            return False
        parts = rel_path.split("/")
        candidates = [(base, rel_path)] if base is not None else []
        candidates += [(spec, "/".join(parts[depth:])) for spec, depth in chain]
        suffix = "/" if is_dir else ""
        verdict = False
        for spec, below in candidates:  # shallow to deep; the last rule that matches decides
            result = spec.check_file(below + suffix)
            if result.include is not None:
                verdict = result.include
        return verdict

    def excluded(self, rel_path: str) -> str | None:
        """Why a path (say, from the watcher) is not indexed, checking every parent directory too; None if it is."""
        parts = PurePosixPath(rel_path).parts
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth])
            if parts[depth - 1] in SKIPPED_DIRS:
                return "vendored or generated directory"
            if self.ignored(directory, is_dir=True):
                return "ignored"
        return "ignored" if self.ignored("/".join(parts), is_dir=False) else None


def _load(files: list[str], exist: bool = False) -> list[pathspec.PathSpec]:
    """The specs of those of `files` that are files (all of them, with `exist`), in order."""
    files = files if exist else [file for file in files if os.path.isfile(file)]
    if not files:
        return []
    import pathspec

    return [pathspec.GitIgnoreSpec.from_lines(_lines(Path(file))) for file in files]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def check_file(root: Path, rel_path: str, size: int, max_bytes: int) -> str | None:
    """Why a candidate file is not indexed (too large, binary, minified, unreadable), or None."""
    if size > max_bytes:
        return "larger than the size limit"
    name = rel_path.rsplit("/", 1)[-1]
    if ".min." in name or name.endswith("-min.js"):
        return "minified"
    try:
        with open(root / rel_path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return "unreadable"
    if b"\0" in head:
        return "binary"
    lines = head.count(b"\n") + 1
    if len(head) >= SNIFF_BYTES and len(head) / lines > MINIFIED_LINE_CHARS:
        return "minified"
    return None


def walk(
    root: Path,
    rules: IgnoreRules,
    skipped: Skipped,
    max_bytes: int,
    under: str = "",
    known: Mapping[str, tuple[int, int]] | None = None,
) -> Iterator[SourceFile]:
    """Every indexable source file under `root` (or its subdirectory `under`), with paths relative to `root`.

    A file in `known` (path -> size, mtime_ns as last indexed) with the same stat is not opened again to
    sniff for binary or minified content: its bytes are taken as unchanged, as the indexer takes them."""
    pending = [under]
    top = str(root)
    while pending:
        rel_dir = pending.pop()
        try:
            with os.scandir(os.path.join(top, rel_dir) if rel_dir else top) as entries:
                listing = sorted(entries, key=lambda e: e.name, reverse=True)
        except OSError:
            skipped.add("unreadable directory", rel_dir or ".")
            continue
        rules.listed(rel_dir, listing)
        for entry in listing:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:  # the entry's type comes with the listing: only a source file is stat-ed
                if entry.is_symlink():
                    skipped.add("symlink (not followed)", rel)
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if entry.name in VENDORED_DIRS:
                        skipped.add("vendored or generated directory", rel + "/")
                    elif entry.name not in TOOL_DIRS and not rules.ignored(rel, is_dir=True):
                        pending.append(rel)
                    continue
                if not entry.is_file(follow_symlinks=False) or (spec := language_for(entry.name)) is None:
                    continue  # a FIFO, socket or device, or no language we index
                info = entry.stat(follow_symlinks=False)
            except OSError:
                skipped.add("unreadable", rel)
                continue
            if rules.ignored(rel, is_dir=False):
                continue
            if known is not None and known.get(rel) == (info.st_size, info.st_mtime_ns) and info.st_size <= max_bytes:
                yield SourceFile(rel, spec, info.st_size, info.st_mtime_ns)
                continue
            if (reason := check_file(root, rel, info.st_size, max_bytes)) is not None:
                skipped.add(reason, rel)
                continue
            yield SourceFile(rel, spec, info.st_size, info.st_mtime_ns)
