"""What the process hands back to the system: freed heap memory, and the resident pages of files it maps (glibc, Linux).

Resident memory per server is paid once for every client session; these are the levers outside the Python heap.
Where glibc or /proc is missing, each does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

M_ARENA_MAX = -8  # mallopt parameter (glibc's malloc.h)
MADV_DONTNEED = 4  # madvise advice (Linux's mman-common.h)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: its allocator has its own policy
        return None


def release_freed_memory() -> None:
    """Hand freed heap memory back to the system (glibc). Without ONNX Runtime's arena, a batch's activations
    are freed when it ends, but malloc keeps the pages for reuse unless told otherwise."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def release_mapped_pages(folder: Path) -> None:
    """Take the pages of files under `folder` that this process maps shared out of its resident memory (Linux).

    The pages stay in the page cache, where whatever reads them again finds them (a minor fault) and which the
    kernel can reclaim; a dirty page stays dirty there and is written as before. The index engine maps its files:
    loading a shard makes its payload indexes' files resident whole (a keyword index: 5 MB of mapped file for a few
    kB of data, even on an empty shard), which nothing reads again but a write's few pages, and written pages stay
    resident until unmapped (vectors twice: mapped to write and to read). Private mappings are left alone: dropping
    their pages would drop their changes.
    """
    libc = _libc()
    if libc is None:
        return
    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:  # not Linux
        return
    prefix = f"{folder}{os.sep}"
    for line in maps:
        fields = line.split(maxsplit=5)  # address, perms, offset, dev, inode, path (which may hold spaces)
        if len(fields) == 6 and fields[1].endswith("s") and fields[5].startswith(prefix):
            start, end = (int(address, 16) for address in fields[0].split("-"))
            libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), MADV_DONTNEED)


def one_malloc_arena() -> None:
    """Make every thread of the process allocate from one glibc arena.

    Each thread (the embedding threads, the index's and the workers') otherwise gets an arena of its own, up to
    16 on two cores, and freed memory stays in them: `serve` on rich held 644 MB once every symbol had its
    vector, and 333 MB with one arena, for no measurable CPU difference (`benchmarks/serve_memory.py`).
    glibc fixes the number of arenas once about eight exist, so this has to run before the process starts
    its threads: `create_embedder` runs it, as the services are built.
    """
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_ARENA_MAX, 1)
