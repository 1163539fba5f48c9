"""The `project-ledger` command's entry point, kept to the standard library.

A client hook (`project-ledger hook claude-code`) first asks the project's running server over its local socket
(`cli/fast_path.py`), before the CLI and its settings are loaded at all: that is most of a hook's cost; one no
server answers does its work itself (`cli/hook_run.py`), still without click and the CLI's commands. Every other
call goes to the click commands in `cli/commands.py`. So does `serve`, unless it
is a stdio proxy to the project's shared server (`cli/mcp_proxy.py`, with LEDGER_SHARED_SERVER on).
"""

from __future__ import annotations

import contextlib
import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["hook"]:
        from project_ledger.cli.fast_path import hook_command

        if hook_command(sys.argv[2:]):
            exit_now()
    elif sys.argv[1:2] == ["serve"]:
        from project_ledger.cli.mcp_proxy import serve_through_shared

        if serve_through_shared(sys.argv[2:]):
            return
    from project_ledger.cli.commands import main as commands

    commands()


def exit_now() -> None:
    """End the process once its work is written (a hook's journal and index closed, its answer printed; a stdio
    server's ledger closed), without tearing the interpreter down: that took a hook working alone 30-60 ms here
    (freeing the settings', records' and patterns' objects), and a stdio server 0.35-0.4 s (the model's runtime, the
    worker threads), while the client waited for the process to end."""
    if (logging := sys.modules.get("logging")) is not None:  # loaded by the ledger, not by a hook the server answered
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)
