"""The `project-ledger` command's entry point, kept to the standard library.

A client hook (`project-ledger hook claude-code`) first asks the project's running server over its local socket
(`cli/fast_path.py`), before the CLI and its settings are loaded at all: that is most of a hook's cost. Every
other call, and a hook no server answers, goes to the click commands in `cli/commands.py`. So does `serve`, unless it
is a stdio proxy to the project's shared server (`cli/mcp_proxy.py`, with LEDGER_SHARED_SERVER on).
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["hook"]:
        from project_ledger.cli.fast_path import answer_from_server

        if answer_from_server(sys.argv[2:]):
            return
    elif sys.argv[1:2] == ["serve"]:
        from project_ledger.cli.mcp_proxy import serve_through_shared

        if serve_through_shared(sys.argv[2:]):
            return
    from project_ledger.cli.commands import main as commands

    commands()
