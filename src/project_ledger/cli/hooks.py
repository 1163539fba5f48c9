"""`project-ledger hook CLIENT`: the click commands, one per client (`hooks/clients/`). The command a client runs,
`hook CLIENT [--data-dir DIR]`, does not come through here: the entry point (`cli/main.py`) hands it to the project's
server or to `cli/hook_run.py` before click is loaded. These commands answer the rest: `--help`, a usage error, and a
hook given the CLI's own options first (`project-ledger -v hook claude-code`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from project_ledger.cli.fast_path import emit
from project_ledger.cli.hook_run import run_hook
from project_ledger.hooks.clients import HOOK_CLIENTS, ClientHooks


@click.group("hook")
def hook_group() -> None:
    """Run by an agent's client at points of its session (configure with `config CLIENT --hooks`).

    It records the conversation as turns and hands the agent relevant memories. It always exits 0 and
    prints nothing on failure; see <data dir>/logs/hooks.log.

    \b
    Example:
      project-ledger config claude-code --hooks --write   # then Claude Code runs `project-ledger hook claude-code`
    """


def client_command(client: ClientHooks) -> click.Command:
    """`hook NAME`: one event of the client, its JSON on stdin."""

    @click.option(
        "--data-dir", type=click.Path(file_okay=False, path_type=Path), help="Data directory (default: <root>/.ledger)."
    )
    def handle(data_dir: Path | None) -> None:
        try:
            raw = sys.stdin.buffer.read()
        except (OSError, ValueError):
            raw = b""
        emit(run_hook(raw, data_dir, client.name))

    return click.command(client.name, help=client.help)(handle)


for _client in HOOK_CLIENTS.values():
    hook_group.add_command(client_command(_client))
