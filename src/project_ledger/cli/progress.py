"""Progress bars on stderr for the CLI's long operations (stdout stays for data), one bar per step.

A step reports `(step, done, total)`; total is None while it is unknown, and the
bar then shows the count and rate without an end.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import TaskID

    from project_ledger.maintenance.service import Report
    from project_ledger.storage.backup import TextSink


@contextmanager
def progress_bars() -> Iterator[Report]:
    """A `Report` drawing one bar per step; the bars disappear when the block ends (a summary line follows).
    Nothing is drawn when stderr is not a terminal: a log keeps only the result, or the one-line error.

    rich is imported here, not with the module, and only for a terminal: every command, `serve` included, loads
    the CLI, and rich costs about 50 ms that only a long command drawing its bars needs (a no-change
    `index` under a script or an agent takes about 0.4 s in all)."""
    if sys.stderr is None or not sys.stderr.isatty():
        yield _silent
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bars:
        tasks: dict[str, TaskID] = {}

        def report(step: str, done: int, total: int | None) -> None:
            if step not in tasks:
                tasks[step] = bars.add_task(step, total=total, rate="")
            task = tasks[step]
            bars.update(task, total=total, completed=done)
            speed = bars.tasks[task].speed
            bars.update(task, rate=f"{speed:,.0f}/s" if speed else "")

        yield report


def _silent(step: str, done: int, total: int | None) -> None:
    """The report of a run whose stderr is not a terminal: nothing is drawn."""


class CountingWriter:
    """Writes through to `out` and reports each line written: progress for a stream of JSON lines."""

    def __init__(self, out: TextSink, *, step: str, total: int | None, report: Report) -> None:
        self._out, self._step, self._total, self._report = out, step, total, report
        self.lines = 0

    def write(self, text: str) -> int:
        written = self._out.write(text)
        self.lines += text.count("\n")
        self._report(self._step, self.lines, self._total)
        return written


def counted_lines(lines: Iterable[str], *, step: str, total_bytes: int | None, report: Report) -> Iterator[str]:
    """The lines of a text stream, reporting the bytes read so far."""
    done = 0
    for line in lines:
        done += len(line.encode("utf-8"))
        report(step, done, total_bytes)
        yield line
