"""The MCP client configurations `project-ledger config` prints or merges: where each client reads its
servers from, and the entry that starts this server there.

The command is absolute (this interpreter, or `uvx`), and so is `--root`: clients
start servers with their own PATH and working directory, Claude Desktop from
outside any project, so nothing may depend on either.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from project_ledger.hooks.clients import ClientHooks


@dataclass(frozen=True)
class Client:
    name: str
    servers_key: str  # VS Code lists servers under "servers", the others under "mcpServers"
    typed: bool  # whether entries say "type": "stdio"
    project_file: str | None  # relative to the project root; None: a per-user file
    # How its file refers to an environment variable ({} the name); None: it has no HTTP servers (Claude Desktop).
    env_reference: str | None = None

    def config_path(self, root: Path) -> Path:
        return root / self.project_file if self.project_file else claude_desktop_config()


CLIENTS = {
    client.name: client
    for client in (
        Client("claude-desktop", "mcpServers", typed=False, project_file=None),
        Client("claude-code", "mcpServers", typed=True, project_file=".mcp.json", env_reference="${{{}}}"),
        Client("cursor", "mcpServers", typed=False, project_file=".cursor/mcp.json", env_reference="${{env:{}}}"),
        Client("vscode", "servers", typed=True, project_file=".vscode/mcp.json", env_reference="${{env:{}}}"),
    )
}


def claude_desktop_config() -> Path:
    """Claude Desktop's configuration file on this platform (Linux builds use the XDG location)."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "Claude" / "claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "Claude" / "claude_desktop_config.json"


def server_command(root: Path, uvx: str | None) -> list[str]:
    """The argv that serves `root`: `uvx` running the published package, or this interpreter running this install.

    The interpreter's path is kept as it is, not resolved: a virtual environment's `python` is a symlink whose
    target would run without the environment's packages.
    """
    serve = ["serve", "--root", str(root)]
    if uvx:
        return [uvx, "--from", "project-ledger", "project-ledger", *serve]
    return [str(Path(sys.executable).absolute()), "-m", "project_ledger", *serve]


def server_entry(client: Client, argv: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio"} if client.typed else {}
    return {**entry, "command": argv[0], "args": argv[1:]}


def http_entry(client: Client, url: str, token_env: str) -> dict[str, Any]:
    """An entry for a server already running at `url`. The token is a reference to the environment variable
    `token_env`, which the client expands when it connects: the secret itself never lands in a file that may be
    shared or committed."""
    if client.env_reference is None:
        others = ", ".join(name for name, each in CLIENTS.items() if each.env_reference is not None)
        raise ConfigFileError(
            f"{client.name} reads only servers it starts itself from its file; add {url} as a connector in its settings, "
            f"or use one of {others}"
        )
    header = "Bearer " + client.env_reference.format(token_env)
    entry: dict[str, Any] = {"type": "http"} if client.typed else {}
    return {**entry, "url": url, "headers": {"Authorization": header}}


def served_root(path: Path, client: Client, name: str) -> str | None:
    """The `--root` that server `name` in the client's file at `path` is started with; None if it has none."""
    document = read_document(path, empty={})
    servers = document.get(client.servers_key) if isinstance(document, dict) else None
    entry = servers.get(name) if isinstance(servers, dict) else None
    args = entry.get("args") if isinstance(entry, dict) else None
    if not isinstance(args, list) or "--root" not in args[:-1]:
        return None
    return str(args[args.index("--root") + 1])


def snippet(client: Client, name: str, entry: dict[str, Any]) -> str:
    return json.dumps({client.servers_key: {name: entry}}, indent=2)


class ConfigFileError(ValueError):
    """The existing file cannot be merged into without losing something."""


def read_document(path: Path, *, empty: dict[str, Any]) -> Any:
    """The JSON document in the client's file at `path`, or `empty` when there is none yet; a file that cannot be
    read, or is not plain JSON (a merge would lose its comments), is a `ConfigFileError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return empty
    except OSError as exc:
        raise ConfigFileError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return json.loads(text) if text.strip() else empty
    except json.JSONDecodeError as exc:
        raise ConfigFileError(f"{path} is not plain JSON ({exc.msg}, line {exc.lineno}); comments are not kept by a merge") from None


def merge(path: Path, *, client: Client, name: str, entry: dict[str, Any]) -> str:
    """Add or replace server `name` in the file at `path`, keeping every other key; returns added, replaced or
    unchanged. The file is replaced atomically, so a client reading it never sees half of it."""
    document = read_document(path, empty={})
    servers = document.get(client.servers_key, {}) if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise ConfigFileError(f"{path} has no JSON object at its top or under {client.servers_key!r}")
    if servers.get(name) == entry:
        return "unchanged"
    outcome = "replaced" if name in servers else "added"
    document[client.servers_key] = {**servers, name: entry}
    write_atomically(path, json.dumps(document, indent=2) + "\n")
    return outcome


def write_atomically(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as exc:
        raise ConfigFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    partial = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        partial.chmod(mode)
        partial.replace(path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ConfigFileError(f"cannot write {path}: {exc.strerror or exc}") from None


# -- the clients' hooks (their blocks are their adapters', `hooks/clients/`) ----------------------------------------


def hook_command(data_dir: Path | None, client: str) -> str:
    """The shell command the client runs for every event: this interpreter (absolute, as for the server entry)
    running the hook; the project is found from the event's folder (`ClientHooks.folder`)."""
    import shlex

    argv = [str(Path(sys.executable).absolute()), "-m", "project_ledger", "hook", client]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir)]
    return shlex.join(argv)


def merge_hooks(path: Path, client: ClientHooks, command: str) -> str:
    """Put the ledger's hook (`command`) on each of the client's events in its hooks file at `path`: after the
    event's entries that are not the ledger's, an older entry of ours replaced; every other key is kept. Returns
    added, replaced or unchanged."""
    wanted, ours = client.config_entries(command), client.is_ours
    document = read_document(path, empty=client.new_config())
    hooks = document.get("hooks", {}) if isinstance(document, dict) else None
    if not isinstance(hooks, dict) or not all(isinstance(hooks.get(event, []), list) for event in wanted):
        raise ConfigFileError(f"{path} has no JSON object at its top, or its 'hooks' is not an object of lists")
    merged, found = {**hooks}, False
    for event, entries in wanted.items():
        existing = hooks.get(event, [])
        found = found or any(ours(entry) for entry in existing)
        merged[event] = [entry for entry in existing if not ours(entry)] + entries
    if merged == hooks:
        return "unchanged"
    document["hooks"] = merged
    write_atomically(path, json.dumps(document, indent=2) + "\n")
    return "replaced" if found else "added"
