"""`project-ledger inspect`: the web inspector, served on this machine."""

from __future__ import annotations

import socket
import urllib.parse
from pathlib import Path

import click

from project_ledger.cli.access_commands import OwnerToken, configured_token, server_access
from project_ledger.cli.listening import listen
from project_ledger.cli.support import NO_AUTH_HELP, check_found_root, ledger_errors, project_options
from project_ledger.cli.terminal import say
from project_ledger.config import Settings, comma_list
from project_ledger.maintenance.access_service import ANONYMOUS, OWNER, AccessService

DEFAULT_PORT = 8766


@click.command(name="inspect")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to serve on; off loopback LEDGER_AUTH_TOKEN is required.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port; 0 picks a free one.")
@click.option("--no-auth", is_flag=True, help=NO_AUTH_HELP)
@project_options
@ledger_errors
def inspect_command(settings: Settings, host: str, port: int, no_auth: bool) -> None:
    """Browse this project's memories in a web page: filter, open, pin and forget them, see why recall ranks
    what it does, preview context packs, and search the code index. Ctrl-C stops it.

    It runs beside a server on the same project (they share the journal).
    Only this machine can reach it unless --host says otherwise. It needs a
    token even on loopback (other accounts can reach 127.0.0.1): open the
    printed address once, with its ?token=, and the browser keeps a cookie.

    \b
    Examples:
      project-ledger inspect                    # then open the printed http://127.0.0.1:8766/?token=...
      project-ledger inspect --port 0           # any free port; the address is printed
      LEDGER_AUTH_TOKEN=$(openssl rand -hex 32) project-ledger inspect --host 0.0.0.0
    """
    check_found_root(settings)
    configured_token(settings, host, no_auth)  # a refused configuration is said first, then a busy port
    listener = listen(host, port)
    try:
        access, owner = server_access(settings, host, no_auth)  # the inspector knows only the owner's token
        try:
            _serve(settings, host, listener, owner, access)
        finally:
            access.close()
    finally:
        listener.close()


def _serve(settings: Settings, host: str, listener: socket.socket, owner: OwnerToken, access: AccessService) -> None:
    """Open the ledger and serve on `listener` until interrupted; pins and forgets made on the page are audited."""
    import uvicorn

    from project_ledger.factory import open_ledger
    from project_ledger.inspector.app import inspector_app
    from project_ledger.inspector.security import allowed_hosts, allowed_origins, url_host

    port = listener.getsockname()[1]
    hosts = allowed_hosts(host, port, comma_list(settings.http_allowed_hosts))
    origins = allowed_origins(host, port, comma_list(settings.http_allowed_origins))
    ledger = open_ledger(settings, Path.cwd())
    actor = ANONYMOUS if owner.value is None else OWNER
    app = inspector_app(
        ledger, hosts=hosts, origins=origins, token=owner.value, audit=lambda tool, ids: access.record(actor, tool, ids)
    )
    query = f"?token={urllib.parse.quote(owner.value)}" if owner.printable and owner.value is not None else ""
    say(f"inspecting {ledger.paths.root} at http://{url_host(host)}:{port}/{query} (Ctrl-C stops)", err=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[listener])
