"""The session-start pack a hook printed, kept so that the next session starts without opening the ledger.

SessionStart fires before the agent's `serve` is up, so no server answers it, and a hook process that loads the
services and the tokenizer to build the pack takes about a second. The pack is made of the project context file,
the pins and the newest gists, within a budget the settings give; the journal's revision counter moves with every
change to a memory. So the hook's output is kept with what it was made from: the revision, the context file's size
and modification time, and the fingerprint of the settings. It is handed out again only while all of them are the
same, which makes it the output the hook would print now; anything else goes the long way, which keeps it anew.

Standard library only, like the hook's other short ways.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Protocol

FILE = "hook_start.json"  # in the data directory (serve's own pack cache is session_start.json)


class PackPaths(Protocol):
    """Where a project's pack comes from (`config.ProjectPaths` is one)."""

    @property
    def journal(self) -> Path: ...

    @property
    def project_context(self) -> Path: ...


def made_from(paths: PackPaths, settings: str) -> dict[str, Any] | None:
    """What a pack made now is made from; None if the journal cannot be read (then nothing is kept or handed out)."""
    return _made_from(paths.journal, paths.project_context, settings)


def _made_from(journal: Path, context_file: Path, settings: str) -> dict[str, Any] | None:
    import sqlite3  # here: the other hooks' short way never needs it

    try:
        db = sqlite3.connect(f"{journal.resolve().as_uri()}?mode=ro", uri=True, timeout=0.5)
        try:
            row = db.execute("SELECT value FROM counters WHERE name = 'rev'").fetchone()
        finally:
            db.close()
    except (sqlite3.Error, OSError):
        return None
    try:
        found = context_file.stat()
        stamp: list[int] | None = [found.st_size, found.st_mtime_ns]
    except FileNotFoundError:
        stamp = None
    except OSError:
        return None
    if row is None:
        return None
    return {"journal": str(journal), "rev": row[0], "context_file": str(context_file), "context": stamp, "settings": settings}


def keep(data_dir: Path, source: dict[str, Any], output: str, ids: list[str]) -> None:
    """Keep `output`, the hook's session-start answer holding the memories `ids`, as made from `source` (`made_from`
    read before it was made). Nothing is kept if the journal changed meanwhile: a forget then may have erased text
    the output quotes."""
    if _made_from(Path(source["journal"]), Path(source["context_file"]), source["settings"]) != source:
        return
    path = data_dir / FILE
    temporary = path.with_name(f".{FILE}.{os.getpid()}")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump({"made_from": source, "output": output, "ids": ids}, out)
        temporary.replace(path)
    except OSError:  # a read-only disk: the next start goes the long way, as it would have
        with contextlib.suppress(OSError):
            temporary.unlink()


def kept(data_dir: Path, settings: str) -> tuple[str, list[str]] | None:
    """The kept session-start answer and the memories it holds, if it is what the hook would print now; else None."""
    try:
        entry = json.loads((data_dir / FILE).read_text(encoding="utf-8"))
        source, output, ids = entry["made_from"], entry["output"], entry["ids"]
        now = _made_from(Path(source["journal"]), Path(source["context_file"]), settings)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if now is None or now != source or not isinstance(output, str) or not isinstance(ids, list):
        return None
    return output, [i for i in ids if isinstance(i, str)]


def discard(data_dir: Path) -> None:
    """Remove the kept answer (`forget` does: it may quote the forgotten text)."""
    with contextlib.suppress(OSError):
        (data_dir / FILE).unlink(missing_ok=True)
