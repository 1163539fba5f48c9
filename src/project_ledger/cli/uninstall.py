"""`project-ledger uninstall`: take out of this project, and of Claude Desktop's file, what `init` and `config` added."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from project_ledger.cli.client_config import CLIENTS, ConfigFileError
from project_ledger.cli.client_removal import remove_hooks, remove_servers, serves
from project_ledger.cli.setup import project_root
from project_ledger.cli.support import project_options
from project_ledger.cli.terminal import say
from project_ledger.config import DATA_DIR_NAME, Settings
from project_ledger.hooks.clients import HOOK_CLIENTS


@click.command()
@click.option("--data", is_flag=True, help="Also delete the ledger's data directory (every memory) and project_context.md.")
@click.option("--yes", is_flag=True, help="With --data: do not ask first.")
@project_options
def uninstall(settings: Settings, data: bool, yes: bool) -> None:
    """Take the ledger out of this project: every server entry serving it (.mcp.json, .cursor/mcp.json,
    .vscode/mcp.json, Claude Desktop's file) and its hooks (.claude/settings.local.json, .claude/settings.json,
    .cursor/hooks.json, .windsurf/hooks.json). Other servers, hooks and settings are kept; a file left empty is
    deleted. An entry for a server over HTTP (`config --url`) names no project: `config CLIENT --remove --name NAME` takes it out. With
    --data, the data directory and project_context.md go too. The program itself is removed as it was installed.

    \b
    Examples:
      project-ledger uninstall
      project-ledger uninstall --data
    """
    root = project_root(settings)
    steps = 0
    try:
        for client in CLIENTS.values():
            path = client.config_path(root)
            names = remove_servers(path, client, lambda _name, entry: serves(entry, root), project_root=root if client.project_file else None)
            for name in names:
                say(f"removed server {name!r} from {path}")
                steps += 1
        for hooks in HOOK_CLIENTS.values():
            for path in hooks.config_files(root):
                if remove_hooks(path, hooks, root):
                    say(f"removed the ledger's hooks from {path}")
                    steps += 1
    except ConfigFileError as exc:
        raise click.ClickException(f"{exc}; take the ledger's entries out of it by hand, then run this again") from None
    if data:
        steps += _delete_data(settings.data_dir.expanduser().resolve() if settings.data_dir else root / DATA_DIR_NAME, root, yes)
    if not steps:
        say(f"nothing of the ledger's found for {root}")
    elif not data and (root / DATA_DIR_NAME).exists():
        say(f"kept {root / DATA_DIR_NAME} (the memories) and project_context.md: --data deletes them", err=True)


def _delete_data(data_dir: Path, root: Path, yes: bool) -> int:
    """Delete the data directory and project_context.md, after asking; how many were deleted."""
    targets = [path for path in (data_dir, root / "project_context.md") if path.exists()]
    if not targets:
        return 0
    if not yes:
        click.confirm(f"Delete {' and '.join(str(path) for path in targets)}? Every memory goes with it", abort=True, err=True)
    for path in targets:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        say(f"deleted {path}")
    return len(targets)
