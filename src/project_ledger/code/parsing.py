"""Reading and parsing one source file into rows, in this process or in a pool of worker processes.

This module and what it imports (the grammars, the extraction, the row types)
are all a worker needs: it does not load the store, the journal or pydantic.
Workers are forked when the calling process runs a single thread (the CLI's
`index`: a fork costs no imports at all); a process with other threads (the
server) may hold locks a fork would copy half-taken, so it starts a fork server
once, which imports this module and is forked for each worker from then on.
"""

from __future__ import annotations

import gc
import itertools
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from project_ledger.code.languages import BY_NAME, Grammars
from project_ledger.code.rows import FileRecord, ParsedFile, content_digest
from project_ledger.code.symbols import extract, plans

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

WorkItem = tuple[str, str, int, int]  # path relative to the root, language name, size, mtime_ns
Result = ParsedFile | tuple[str, str]  # the rows, or (path, why it was not parsed)
WATCH_SECONDS = 0.5  # how often a worker checks that its parent is still there

_worker_grammars: Grammars | None = None


def parse_file(grammars: Grammars, root: Path, path: str, language: str, size: int, mtime_ns: int, redact: bool) -> Result:
    try:
        source = (root / path).read_bytes()
    except FileNotFoundError:
        return path, "deleted"
    except OSError as exc:
        return path, f"unreadable ({exc.strerror or exc})"
    digest = content_digest(source)
    symbols = extract(grammars.get(BY_NAME[language]), source)
    record = FileRecord(path, language, size, mtime_ns, digest, source.count(b"\n") + (not source.endswith(b"\n")))
    return ParsedFile.build(record, symbols.definitions, symbols.references, redact)


def _parse_chunk(root: str, redact: bool, chunk: list[WorkItem]) -> list[Result]:
    """Parse files in a worker process, with grammars loaded once per worker."""
    global _worker_grammars
    if _worker_grammars is None:
        _worker_grammars = Grammars()
    return [parse_file(_worker_grammars, Path(root), *item, redact=redact) for item in chunk]


def _exit_with_parent(parent: int | None) -> None:
    """Run in each worker as it starts: exit once the process that started it (`parent`, else whichever is its
    parent now) is gone. A worker killed with its indexing process must not wait for work forever, and a forked
    one would: it holds copies of the pool's pipe ends, so the ends it reads from never close."""
    watched = parent if parent is not None else os.getppid()

    def watch() -> None:
        while os.getppid() == watched:
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def pool_context() -> BaseContext:
    """`fork` in a single-threaded process where the platform has it; otherwise a fork server preloaded with
    this module (`__main__` too, else every worker would import the program's entry module again)."""
    import multiprocessing  # only a scan of many files starts workers

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["__main__", __name__])
        return context
    return multiprocessing.get_context("spawn")


def parse_pooled(
    root: Path,
    redact: bool,
    items: Iterable[WorkItem],
    workers: int,
    chunk_files: int,
    grammars: Grammars,
    languages: Iterable[str],
) -> Iterator[Result]:
    """Parse `items` in `workers` processes, `chunk_files` per task; results in the order of `items`. Each chunk is
    handed out as soon as `items` yields it, so the workers start while a walk producing `items` goes on.

    Forked workers start with `grammars`, loaded here first for `languages` (those of the first files): each worker
    would otherwise import the grammars and compile their queries itself, before its first file."""
    global _worker_grammars
    from concurrent.futures import ProcessPoolExecutor

    iterator = iter(items)
    chunks = iter(lambda: list(itertools.islice(iterator, chunk_files)), [])  # lists of chunk_files until none is left
    context = pool_context()
    parent = os.getpid() if context.get_start_method() == "fork" else None  # else the fork server is the parent
    if parent is not None:
        for language in set(languages):
            plans(grammars.get(BY_NAME[language]))
        _worker_grammars = grammars
        # The objects a forked worker inherits are left out of its collections: they would be walked again and
        # again, and each walk writes to pages the worker then has to copy (django: 6% of the workers' CPU).
        gc.freeze()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_exit_with_parent, initargs=(parent,))
    try:
        for chunk_results in pool.map(_parse_chunk, itertools.repeat(str(root)), itertools.repeat(redact), chunks):
            yield from chunk_results
    finally:  # also when the caller stops early (a cancelled scan): drop the chunks not started
        pool.shutdown(wait=True, cancel_futures=True)
        if parent is not None:
            gc.unfreeze()
            _worker_grammars = None
