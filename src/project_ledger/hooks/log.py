"""The hooks' log: one line per hook run in `<data dir>/logs/hooks.log`, the last of which `doctor` reads.

The hook's shortest ways (the running server's answer, a kept session-start pack) write it before anything else of
the ledger is loaded.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

HOOK_LOG = Path("logs") / "hooks.log"  # under the data directory
HOOK_LOG_BYTES = 1 << 20  # then it moves to hooks.log.1, replacing the one before


def log_hook(data_dir: Path | None, line: str) -> None:
    """Append `line`, after the time, to the hooks log if the project has a data directory; else to stderr."""
    line = f"{datetime.now(UTC).isoformat(timespec='microseconds').replace('+00:00', 'Z')} {line}"
    if data_dir is None or not data_dir.is_dir():
        print(f"project-ledger hook: {line}", file=sys.stderr)
        return
    try:
        path = data_dir / HOOK_LOG
        path.parent.mkdir(exist_ok=True)
        if path.exists() and path.stat().st_size > HOOK_LOG_BYTES:
            path.replace(path.with_name(path.name + ".1"))
        with path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")
    except OSError as exc:  # a read-only disk: the line goes to stderr, the hook still succeeds
        print(f"project-ledger hook: {line} (could not write {data_dir / HOOK_LOG}: {exc.strerror or exc})", file=sys.stderr)
