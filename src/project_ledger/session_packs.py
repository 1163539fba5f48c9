"""What each client session was handed of the session-start pack: one small record per session in the data dir.

The pack (guide, project_context.md, pins, newest gists) is handed to a session once. Claude Code fires SessionStart
again on every `--continue` and `--resume` of a session whose history already holds the pack, and the prompt hook
must not inject again what the pack gave; both ask here. After a compaction (or a /clear) the history no longer holds
it: the pack is handed again and its record replaced.

Hooks are separate processes, and the project's server answers some of them: they share the data directory, so the
record is a file, `sessions/<digest of the session id>.json`, holding the session id, when and why the pack was
handed, and the ids of the memories it held. A first hand-over creates the file exclusively (written aside, then
linked into place), so of two processes starting one session at once only one hands the pack over; a later one
replaces it atomically. Readers see the whole record or none. Records older than `KEEP_DAYS` are removed when a new
one is made: a session resumed after that gets the pack again.

Standard library only: the hook's short way reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FOLDER = "sessions"  # in the data directory
KEEP_DAYS = 30
# SessionStart sources after which the session's context no longer holds the pack.
AGAIN = frozenset({"compact", "clear"})


def record_path(data_dir: Path, session: str) -> Path:
    return data_dir / FOLDER / f"{hashlib.sha256(session.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}.json"


def handed(data_dir: Path, session: str) -> list[str] | None:
    """The ids of the memories the session's pack held, if it was handed one (possibly none); None if it was not."""
    try:
        record = json.loads(record_path(data_dir, session).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("session") != session or not isinstance(record.get("ids"), list):
        return None
    return [i for i in record["ids"] if isinstance(i, str)]


def hand(data_dir: Path, session: str, source: str | None, ids: list[str]) -> bool:
    """Record that the session is handed a pack holding `ids`; False when it already was (the caller then hands it
    nothing). After a compaction or a /clear (`source` in `AGAIN`) it is handed again and the record replaced. A
    record that cannot be written (a read-only disk) does not stop the hand-over."""
    path = record_path(data_dir, session)
    record: dict[str, Any] = {"session": session, "source": source, "handed_at": datetime.now(UTC).isoformat(), "ids": ids}
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        temporary = path.with_name(f".{path.stem}.{os.getpid()}.{time.monotonic_ns()}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(record, out)
    except OSError:
        return True
    try:
        if source in AGAIN:
            temporary.replace(path)
            return True
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
        except OSError:  # no hard links here: the first writer still wins, if not atomically
            if path.exists():
                return False
            temporary.replace(path)
            return True
        _forget_old(path.parent)
        return True
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _forget_old(folder: Path) -> None:
    cutoff = time.time() - KEEP_DAYS * 86400
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
