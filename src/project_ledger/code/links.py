"""Memories anchored to code, and whether that code has changed since they were stored.

A memory is anchored to the files and symbols its caller names (`files`,
`symbols`) and to any symbol its text names unambiguously: a word that looks
like an identifier (`snake_case`, `camelCase`, `Type.method`, `Type::fn`,
`call()`, or anything in backticks) and matches exactly one definition in the
code index, or a relative path of a file that exists. Each anchor keeps the
target's content hash; when the hash differs later, the memory is stale.

Files are hashed from disk, so any file can be an anchor (a config, a
migration), not only parsed source. Symbols are hashed by the code index.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from project_ledger.errors import InvalidArgument
from project_ledger.storage.journal import Anchor
from project_ledger.text.text_signals import identifier_candidates

if TYPE_CHECKING:  # the code index's store: the memory service imports this module, a hook with no code index too
    from project_ledger.code.store import CodeStore

MAX_TEXT_ANCHORS = 10
MAX_HASHED_FILE_BYTES = 8 * 1024 * 1024

_PATH = re.compile(r"(?<![\w./-])(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b")


def project_path(root: Path, value: str) -> str:
    """`value` as a path relative to the project root, refusing anything outside it."""
    raw = value.strip().replace("\\", "/")
    if "\x00" in raw:
        raise InvalidArgument(f"path {value!r} contains a NUL character; give a path inside the project root")
    candidate = Path(raw)
    if candidate.is_absolute():
        try:
            raw = candidate.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise InvalidArgument(f"path {value!r} is outside the project root {root}; paths must be inside it") from None
    parts = PurePosixPath(raw).parts
    if ".." in parts:
        raise InvalidArgument(f"path {value!r} contains '..'; give a path relative to the project root, inside it")
    relative = "/".join(part for part in parts if part != ".")
    real_root = root.resolve()
    if not (real_root / relative).resolve().is_relative_to(real_root):
        raise InvalidArgument(f"path {value!r} leads outside the project root {root} through a symlink; paths must stay inside it")
    return relative


def describe(anchor: Anchor) -> str:
    return f"file {anchor.path}" if anchor.target == "file" else f"symbol {anchor.name} in {anchor.path}"


class CodeAnchors:
    """Resolves what a memory names into anchors, and reports which anchors changed."""

    def __init__(self, root: Path, store: CodeStore | None, scanning: Callable[[], bool]) -> None:
        self.root = root
        self.store = store
        self._scanning = scanning  # while the first scan runs, a symbol not found yet is not "gone"
        self._digests: dict[str, tuple[tuple[int, int], str]] = {}
        self._lock = threading.Lock()

    def file_digest(self, path: str) -> str | None:
        """The file's content hash, cached by (mtime, size); None when it does not exist or cannot be read."""
        try:
            stat = (self.root / path).stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            with self._lock:
                cached = self._digests.get(path)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            if stat.st_size > MAX_HASHED_FILE_BYTES or not os.path.isfile(self.root / path):
                return None
            from project_ledger.code.rows import content_digest  # with the code index's modules, on use

            digest = content_digest((self.root / path).read_bytes())
        except OSError:
            return None
        with self._lock:
            self._digests[path] = (stamp, digest)
        return digest

    def resolve(self, text: str, files: Sequence[str], symbols: Sequence[str]) -> tuple[list[Anchor], list[str]]:
        """Anchors for a new memory, and notes on names that could not be anchored."""
        anchors: dict[tuple[str, str, str], Anchor] = {}
        notes: list[str] = []
        for value in files:
            path = project_path(self.root, value)
            anchors[("file", path, "")] = Anchor("file", path, "", self.file_digest(path))
            if anchors[("file", path, "")].hash is None:
                notes.append(f"file {path} does not exist (yet): it is linked, and its first version seen counts as the original")
        if self.store is None:
            if symbols:
                notes.append("the code index is off: symbols are kept as labels but cannot go stale")
            return list(anchors.values()), notes
        for name in symbols:
            sites = self.store.definition_sites(name, 20)
            if not sites:
                notes.append(f"symbol {name} is not in the code index" + (" yet (indexing)" if self._scanning() else ""))
            for path, qualname in sites[:5]:
                anchors[("symbol", path, qualname)] = Anchor("symbol", path, qualname, self.store.symbol_digest(path, qualname))
        named = 0
        for word in identifier_candidates(text):
            sites = self.store.definition_sites(word, 2)
            if len(sites) == 1 and ("symbol", *sites[0]) not in anchors and named < MAX_TEXT_ANCHORS:
                path, qualname = sites[0]
                anchors[("symbol", path, qualname)] = Anchor("symbol", path, qualname, self.store.symbol_digest(path, qualname))
                named += 1
        for match in _PATH.finditer(text):
            path = match.group(0)
            if ("file", path, "") not in anchors and (digest := self.file_digest(path)) is not None:
                anchors[("file", path, "")] = Anchor("file", path, "", digest)
        return list(anchors.values()), notes

    def current(self, anchor: Anchor) -> str | None:
        if anchor.target == "file":
            return self.file_digest(anchor.path)
        return self.store.symbol_digest(anchor.path, anchor.name) if self.store is not None else anchor.hash

    def changes(self, anchors: Sequence[Anchor], settle: Callable[[Anchor, str], None]) -> list[str]:
        """What changed among `anchors` since they were recorded; `settle` records a first-seen hash."""
        changed: list[str] = []
        for anchor in anchors:
            now = self.current(anchor)
            if anchor.hash is None:
                if now is not None:
                    settle(anchor, now)
                continue
            if now == anchor.hash:
                continue
            if now is not None:
                changed.append(f"{describe(anchor)} changed")
            elif anchor.target == "file":
                changed.append(f"{describe(anchor)} was deleted")
            elif not self._scanning():
                changed.append(f"{describe(anchor)} no longer exists")
        return changed
