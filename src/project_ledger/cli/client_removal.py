"""Taking out of the clients' files what `project-ledger config` put there, and nothing else.

A server entry is the ledger's when the command it runs is `project_ledger` or `project-ledger` (`config --url`
entries name no command: they are taken out by name only). A hook is the ledger's by its command, as `config
--hooks` recognises its own. Every other key, server and hook is kept. A project file left with nothing but the
empty shape `config` gave it (`{"mcpServers": {}}`, `{"hooks": {}}`, `{"version": 1}`) is deleted, and so is the
folder it made for it (`.cursor/`, `.vscode/`, `.claude/`, `.windsurf/`) when nothing else is in it; Claude Desktop's own file,
which holds its other settings, never is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from project_ledger.cli.client_config import Client, ConfigFileError, read_document, write_atomically
from project_ledger.hooks.clients import ClientHooks

LEDGER_COMMANDS = ("project_ledger", "project-ledger")


def is_ledger_server(entry: Any) -> bool:
    """Whether a server entry starts this program (whatever interpreter, uvx or path runs it)."""
    if not isinstance(entry, dict):
        return False
    given = entry.get("args")
    args = given if isinstance(given, list) else []
    words = [str(entry.get("command", "")), *(str(arg) for arg in args)]
    return any(name in word for word in words for name in LEDGER_COMMANDS)


def serves(entry: Any, root: Path) -> bool:
    """Whether a server entry of the ledger serves `root` (its `--root`)."""
    args = entry.get("args") if isinstance(entry, dict) else None
    if not is_ledger_server(entry) or not isinstance(args, list) or "--root" not in args[:-1]:
        return False
    return Path(str(args[args.index("--root") + 1])) == root


def remove_servers(path: Path, client: Client, wanted: Callable[[str, Any], bool], *, project_root: Path | None) -> list[str]:
    """Take the servers `wanted(name, entry)` picks out of the client's file at `path`; their names. `project_root`:
    the root the file belongs to (None for a per-user file), for removing what `config` created there."""
    document = read_document(path, empty={})
    servers = document.get(client.servers_key) if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        return []
    gone = [name for name, entry in servers.items() if wanted(name, entry)]
    if gone:
        document[client.servers_key] = {name: entry for name, entry in servers.items() if name not in gone}
        _save(path, document, emptied=({client.servers_key: {}}, {}), project_root=project_root)
    return gone


def remove_hooks(path: Path, client: ClientHooks, project_root: Path) -> bool:
    """Take the ledger's hooks out of the client's hooks file at `path`; whether any were."""
    document = read_document(path, empty={})
    hooks = document.get("hooks") if isinstance(document, dict) else None
    if not isinstance(hooks, dict):
        return False
    ours = client.is_ours
    kept: dict[str, Any] = {}
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            kept[event] = entries
        elif remaining := [entry for entry in entries if not ours(entry)]:
            kept[event] = remaining
    if kept == hooks:
        return False
    document["hooks"] = kept
    if not kept:
        del document["hooks"]
    _save(path, document, emptied=({}, client.new_config()), project_root=project_root)
    return True


def _save(path: Path, document: dict[str, Any], *, emptied: tuple[dict[str, Any], ...], project_root: Path | None) -> None:
    """Write `document` back, or delete a project file (and the folder `config` made for it) left as one of the
    `emptied` shapes."""
    if project_root is None or document not in emptied:
        write_atomically(path, json.dumps(document, indent=2) + "\n")
        return
    try:
        path.unlink()
        if path.parent != project_root and not any(path.parent.iterdir()):
            path.parent.rmdir()
    except OSError as exc:
        raise ConfigFileError(f"cannot remove {path}: {exc.strerror or exc}") from None
