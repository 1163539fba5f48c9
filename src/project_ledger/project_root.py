"""Which directory is the project, when the server is not told with `--root`.

Clients start stdio servers in different places: Claude Code in the project,
VS Code and Cursor often in the workspace or the home directory, Claude Desktop
wherever it likes. A wrong guess would scatter `.ledger/` directories over the
disk, so a guess is only taken when the directory looks like a project, and the
home directory and the filesystem's root are never taken at all. The client's
MCP roots, when it offers them, settle the question.

Plain standard library: a hook asking a running server for its answer finds the project with this alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

DATA_DIR_NAME = ".ledger"
SET_UP_MARKERS = (DATA_DIR_NAME, "project_context.md")  # what `init` leaves at a project's root
PROJECT_MARKERS = (".git", *SET_UP_MARKERS)


class RootChoice(NamedTuple):
    """The project root, or None with the reason none was taken; `source` says where it came from."""

    root: Path | None
    source: str
    reason: str = ""


def find_project_root(cwd: Path) -> Path:
    """The git top-level containing `cwd` (a `.git` dir or worktree file); else the nearest folder at or above it
    that holds a ledger or a `project_context.md` (a project set up without git), below the home directory; else
    `cwd` itself. So every command run in a subfolder finds the ledger that `init` made at the top."""
    cwd = cwd.resolve()
    for candidate in (cwd, *cwd.parents):
        if (candidate / ".git").exists():
            return candidate
    for candidate in (cwd, *cwd.parents):
        if unsuitable(candidate):
            break
        if any((candidate / marker).exists() for marker in SET_UP_MARKERS):
            return candidate
    return cwd


def unsuitable(path: Path) -> str | None:
    """Why `path` must not hold a ledger unless the user names it explicitly, or None if it may."""
    path = path.resolve()
    if path == Path(path.anchor):
        return f"{path} is the filesystem's root"
    home = os.environ.get("HOME")
    if home and path == Path(home).resolve():
        return f"{path} is the home directory"

    return None


def from_working_directory(cwd: Path) -> RootChoice:
    """The git top-level of `cwd`, or `cwd` itself, if it holds a project marker and is not unsuitable; else no root."""
    cwd = cwd.resolve()
    for candidate in dict.fromkeys((find_project_root(cwd), cwd)):
        if not unsuitable(candidate) and any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return RootChoice(candidate, "working directory")
    if reason := unsuitable(cwd):
        return RootChoice(None, "working directory", f"the working directory {reason}")
    markers = ", ".join(PROJECT_MARKERS)
    return RootChoice(None, "working directory", f"the working directory {cwd} is in no project (it has none of {markers})")


def from_client_roots(uris: list[str]) -> RootChoice:
    """The first local directory among the client's roots (its workspace folders, in its order)."""
    from urllib.parse import unquote, urlparse

    for uri in uris:
        parsed = urlparse(uri)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            continue
        path = Path(unquote(parsed.path))
        if not path.is_dir():
            continue
        if reason := unsuitable(path):
            return RootChoice(None, "client roots", f"the client's workspace root is unsuitable: {reason}")
        top = find_project_root(path)
        return RootChoice(path if unsuitable(top) else top, "client roots")
    return RootChoice(None, "client roots", f"the client's roots hold no local directory ({', '.join(uris) or 'none'})")
