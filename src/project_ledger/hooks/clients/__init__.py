"""The clients whose hooks the ledger answers, one adapter module each, listed here. The `hook` and `config --hooks`
commands, `uninstall`, the hook's short way and the server's socket find a client here by its name and nowhere else.

A new client is a module beside these with its `ClientHooks`, and one line below.
"""

from __future__ import annotations

from project_ledger.hooks.clients.base import ClientHooks
from project_ledger.hooks.clients.claude_code import ClaudeCode
from project_ledger.hooks.clients.cursor import Cursor
from project_ledger.hooks.clients.windsurf import Windsurf

HOOK_CLIENTS: dict[str, ClientHooks] = {client.name: client for client in (ClaudeCode(), Cursor(), Windsurf())}
