"""The hooks' log: one line per hook run in `<data dir>/logs/hooks.log`, the last of which `doctor` reads.

The hook's shortest ways (the running server's answer, a kept session-start pack) write it before anything else of
the ledger is loaded.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HOOK_LOG = Path("logs") / "hooks.log"  # under the data directory
HOOK_LOG_BYTES = 1 << 20  # then it moves to hooks.log.1, replacing the one before


@dataclass(frozen=True)
class HookRun:
    """One hook run as the log keeps it, on one line: `<time> <state> <event> session=<id> <n>ms[ served] <detail>`."""

    state: str  # `ok`, or `error` (the session went on all the same)
    event: str  # the client's event name, or `-` when the input named none
    session: str
    milliseconds: int
    served: bool  # answered by the project's running server, over its socket
    detail: str  # what was stored and injected, where the answer came from, or the error
    at: datetime | None = None  # when it was written; None until then

    @property
    def kept(self) -> bool:
        """Whether the session-start pack kept for the session answered, with no ledger opened (`cli/fast_path.py`)."""
        return self.detail.split(" ", 1)[0] == "kept"

    def line(self) -> str:
        """The run on one line: an event or session named with spaces or line breaks (a client's input) cannot split
        it or forge another."""
        event, session = ("_".join(value.split()) or "-" for value in (self.event, self.session))
        served = " served" if self.served else ""
        return f"{self.state} {event} session={session} {self.milliseconds}ms{served} {' '.join(self.detail.split())}".rstrip()


def parse_run(line: str) -> HookRun | None:
    """A log line read back, or None for one this module did not write."""
    parts = line.split(" ", 5)
    if len(parts) < 5 or not parts[3].startswith("session=") or not parts[4].endswith("ms") or not parts[4][:-2].isdigit():
        return None
    try:
        at = datetime.fromisoformat(parts[0])
    except ValueError:
        return None
    rest = parts[5] if len(parts) > 5 else ""
    served = rest == "served" or rest.startswith("served ")
    detail = rest.removeprefix("served").lstrip() if served else rest
    return HookRun(parts[1], parts[2], parts[3].removeprefix("session="), int(parts[4][:-2]), served, detail, at)


def read_runs(data_dir: Path) -> list[HookRun]:
    """Every run the project's hooks log holds, oldest first (the rotated log's too)."""
    path = data_dir / HOOK_LOG
    lines: list[str] = []
    for part in (path.with_name(path.name + ".1"), path):
        try:
            lines += part.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
    return [run for run in map(parse_run, lines) if run is not None]


def log_hook(data_dir: Path | None, run: HookRun) -> None:
    """Append the run, after the time, to the hooks log if the project has a data directory; else to stderr."""
    line = f"{datetime.now(UTC).isoformat(timespec='microseconds').replace('+00:00', 'Z')} {run.line()}"
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
