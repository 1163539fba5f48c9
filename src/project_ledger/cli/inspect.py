"""`project-ledger inspect`: the web inspector, served on this machine."""

from __future__ import annotations

import socket
import urllib.parse
from pathlib import Path

import click

from project_ledger.cli.access import OwnerToken, server_access
from project_ledger.cli.support import NO_AUTH_HELP, ledger_errors, project_options
from project_ledger.cli.terminal import say
from project_ledger.config import Settings, comma_list
from project_ledger.maintenance.access import ANONYMOUS, OWNER, AccessService

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
    access, owner = server_access(settings, host, no_auth)  # the inspector knows only the owner's token
    try:
        _serve(settings, host, port, owner, access)
    finally:
        access.close()


def _serve(settings: Settings, host: str, port: int, owner: OwnerToken, access: AccessService) -> None:
    """Bind, open the ledger, and serve until interrupted; pins and forgets made on the page are audited."""
    import uvicorn

    from project_ledger.factory import open_ledger
    from project_ledger.inspector.app import inspector_app
    from project_ledger.inspector.security import allowed_hosts, allowed_origins, url_host

    listener = _listen(host, port)
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


def _listen(host: str, port: int) -> socket.socket:
    """Bind before anything is opened, so a busy port is one clear line, not a log entry after start-up."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise click.ClickException(f"cannot serve on {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError as exc:
        listener.close()
        raise click.ClickException(f"cannot listen on {host} port {port}: {exc.strerror}; choose another --port") from None
    listener.listen(128)
    return listener
