"""The listening socket of `serve --transport http` and `inspect`, bound before anything else happens."""

from __future__ import annotations

import errno
import socket

import click


def listen(host: str, port: int) -> socket.socket:
    """Bind `host`:`port` (0: a free port, read back with `getsockname`) before the ledger opens or a token is
    printed, so a busy port is one clear line, not uvicorn's log entry after start-up."""
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
        taken = "another program is using it" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise click.ClickException(
            f"cannot listen on {host} port {port}: {taken}; choose another with --port N, or --port 0 for any free one"
        ) from None
    listener.listen(128)
    return listener
