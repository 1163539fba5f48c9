"""A running server's local socket: one request, one answer, between processes of one user on one project.

A hook is a new process on every prompt; loading the ledger's modules and opening its journal and index takes it
most of its time. When `serve` is up for the project (it is, while the agent's session is), it listens on
`<data dir>/serve.sock`, and the hook hands it the event instead. Whatever goes wrong on that path (no server,
a stale socket file, a server that died mid-request or does not answer in time, a platform without Unix
sockets) the caller gets None and does the work itself: the socket is a shortcut, never a dependency.

The wire format: the request is one JSON object, the writer's side then shut; the answer is one JSON object,
then the connection closes. Plain standard library, so that a client pays for nothing else.

Who listens is settled by a lock file beside the socket (`serve.sock.lock`): its holder owns the socket path. A
socket file whose lock is free is stale (its server died) and is replaced; the lock goes with the process,
however it ends. Only the owner's account may connect: the socket is mode 600 inside the private data
directory, and where the platform names a peer's user (Linux), another user's connection is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from project_ledger.file_lock import FileLock

SOCKET_NAME = "serve.sock"
LOCK_NAME = "serve.sock.lock"
MAX_REQUEST_BYTES = 4 << 20  # a hook's input is a prompt (at most LEDGER_MAX_TEXT_BYTES) and a few paths
SUPPORTED = hasattr(socket, "AF_UNIX") and os.name == "posix"
# Settings the two processes must agree on for one to answer for the other (see `settings_fingerprint`).
SHARED_SETTINGS = ("LEDGER_", "QDRANT_URL", "QDRANT_API_KEY")
# ...except those that only say how the stdio server is shared (`cli/mcp_proxy.py`): they change no answer.
UNSHARED_SETTINGS = ("LEDGER_SHARED_",)

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def socket_path(data_dir: Path) -> Path:
    return data_dir / SOCKET_NAME


def shared_server_path(data_dir: Path, fingerprint: str, suffix: str = ".sock") -> Path:
    """Where the project's shared MCP server for these settings listens (`.sock`), who owns it (`.lock`, holding
    its pid) and who may start it (`.start`): one per settings fingerprint, so that a client never reaches a
    server that runs with other settings than its own (see `cli/mcp_proxy.py`)."""
    return data_dir / f"mcp-{fingerprint[:16]}{suffix}"


def settings_environment(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The environment variables the ledger's settings read, names upper-cased (the settings read them so)."""
    return tuple(
        sorted(
            (key.upper(), value)
            for key, value in environ.items()
            if key.upper().startswith(SHARED_SETTINGS) and not key.upper().startswith(UNSHARED_SETTINGS)
        )
    )


def settings_fingerprint(environ: Mapping[str, str]) -> str:
    """A digest of `settings_environment`. A server answers a hook only when its digest is the same: then both
    would have built the same settings, and the answer is the one the hook would have worked out itself."""
    return hashlib.sha256(json.dumps(settings_environment(environ)).encode()).hexdigest()


@contextmanager
def address(path: Path) -> Iterator[str]:
    """An address for `path` that fits a socket address (about 100 bytes): the path itself, or, when it is longer,
    the same file reached through an open descriptor of its folder (Linux's /proc/self/fd)."""
    if len(os.fsencode(path)) < 100:
        yield str(path)
        return
    if not os.path.isdir("/proc/self/fd"):
        raise OSError(f"the socket path {path} is too long for this platform")
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)


def ask(path: Path, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """Send `request` to the server listening at `path` and return its answer; None when there is no server, it
    does not answer within `timeout` seconds, or the answer is not a JSON object."""
    if not SUPPORTED or not path.exists():
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            with address(path) as where:
                conn.connect(where)
            conn.sendall(json.dumps(request).encode())
            conn.shutdown(socket.SHUT_WR)
            answer = json.loads(_read_all(conn, MAX_REQUEST_BYTES))
    except (OSError, ValueError):  # refused (stale), reset (it died), timed out, cut short
        return None
    return answer if isinstance(answer, dict) else None


def _read_all(conn: socket.socket, limit: int) -> bytes:
    chunks, size = [], 0
    while chunk := conn.recv(65536):
        size += len(chunk)
        if size > limit:
            raise ValueError(f"more than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


class Listener:
    """Serves `handler` on the socket of one data directory, a thread per connection, until `close()`.

    `open()` returns False, listening on nothing, when another live process holds the socket (a second server on
    the project) or the platform has no Unix sockets; the caller may try again later.
    """

    def __init__(self, data_dir: Path, handler: Handler, *, timeout: float = 30.0) -> None:
        self.data_dir = data_dir
        self.path = socket_path(data_dir)
        self._handler = handler
        self._timeout = timeout
        self._lock: FileLock | None = None
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def open(self) -> bool:
        if not SUPPORTED:
            return False
        lock = FileLock.try_acquire(self.data_dir / LOCK_NAME)
        if lock is None:  # another server on this project listens
            return False
        try:
            sock = listen_at(self.path, 16)  # a socket file whose lock was free is stale: its server died
        except OSError:
            lock.release()
            raise
        self._lock, self._sock = lock, sock
        self._thread = threading.Thread(target=self._accept, name="ledger-socket", daemon=True)
        self._thread.start()
        return True

    def close(self) -> None:
        """Stop listening and remove the socket file; requests being answered finish on their own threads."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        self.path.unlink(missing_ok=True)  # first, so that no new client finds it
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _accept(self) -> None:
        while (sock := self._sock) is not None:
            try:
                conn, _ = sock.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), name="ledger-socket-request", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(self._timeout)
                if not same_user(conn):
                    answer: dict[str, Any] = {"error": "this socket answers its owner's processes only"}
                else:
                    try:
                        request = json.loads(_read_all(conn, MAX_REQUEST_BYTES))
                    except ValueError as exc:
                        answer = {"error": f"the request must be one JSON object, then the end of the stream ({exc})"}
                    else:
                        answer = self._answer(request)
                conn.sendall(json.dumps(answer).encode())
            except OSError:  # the client went away; what it asked for is done or was never started
                pass

    def _answer(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            return {"error": f"the request must be a JSON object, not {type(request).__name__}"}
        try:
            return self._handler(request)
        except Exception as exc:  # one request's failure must not stop the listener
            import logging  # here: a hook asking a server never needs it

            logging.getLogger(__name__).exception("a local socket request failed")
            return {"error": f"the server failed on this request ({type(exc).__name__}: {exc})"}


def listen_at(path: Path, backlog: int) -> socket.socket:
    """A Unix socket listening at `path`, mode 600. The caller holds the path's lock, so a file left there is a dead
    server's and is replaced."""
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with address(path) as where:
            sock.bind(where)
        os.chmod(path, 0o600)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this process's user, where the platform says (Linux); elsewhere the socket's mode
    and the private data directory keep other accounts out."""
    credentials = getattr(socket, "SO_PEERCRED", None)
    if credentials is None:
        return True
    import struct

    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, credentials, struct.calcsize("3i")))
    return uid == os.getuid()
