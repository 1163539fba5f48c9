"""`serve` over stdio as a thin proxy to the project's shared server (LEDGER_SHARED_SERVER=true).

Every MCP client starts its own `serve`. Without sharing, each one imports the MCP SDK, loads the embedding model
and opens an index slot: half a second before `initialize` is answered, and some 400 MB per client. The proxy
imports only the standard library. It connects to the one server the project's clients share
(`mcp/shared.py`) on a local socket in the data directory and passes the client's JSON-RPC lines through, both
ways, unchanged. If no server is up, it starts one (detached, its own session, logging to
`<data dir>/logs/shared-server.log`) and waits for it; a lock file settles which proxy starts it.

The guarantees of a server of one's own stay:
- Writes are committed to the journal before they are answered, by the shared server as by any other.
- Each client has its own MCP session (its own handshake, client info, sampling requests and session-start pack).
- A proxy runs with the settings of its own environment: the socket's name carries the fingerprint of its
  LEDGER_* settings (`local_socket.settings_fingerprint`), so proxies with other settings share another server.
- Any process may die. A dead proxy is a closed connection. If the shared server dies, each request it had not
  answered gets a JSON-RPC error that says to retry (never a hang); the next message starts or finds a new
  server, and the proxy replays the client's `initialize` and `notifications/initialized` to it silently first.

Only a server with a named project is shared (`--root` or LEDGER_ROOT, as `config` writes it): a server that
follows the client's workspace (MCP roots) or the working directory is the client's own. When the shared server
cannot be reached at start, the proxy says why on stderr and serves in this process instead.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from project_ledger.cli.early_options import environment, is_on, named_data_dir, options
from project_ledger.file_lock import FileLock
from project_ledger.local_socket import SUPPORTED, address, settings_fingerprint, shared_server_path

START_SECONDS = 60.0  # a cold server imports the SDK and opens the journal and the index first
HELLO_SECONDS = 10.0
REPLAY_SECONDS = 30.0
CLOSE_SECONDS = 10.0  # after the client closes, the answers still on their way
RETRY = -32603  # JSON-RPC internal error: what a request gets when the server died before answering it


class Unavailable(Exception):
    """No shared server could be reached or started; the message says why."""


def shared_target(args: list[str], environ: Mapping[str, str]) -> tuple[Path, Path] | None:
    """The (root, data dir) of `serve <args>` when it is to go through a shared server: LEDGER_SHARED_SERVER is on,
    the transport is stdio and the project is named (--root or LEDGER_ROOT) and exists. None for anything else,
    which the full CLI serves (and reports on) as before."""
    if not is_on(environ, "LEDGER_SHARED_SERVER") or not SUPPORTED:
        return None
    given = options(args, ("--root", "--data-dir", "--transport"))
    if given is None or given.get("--transport", "stdio") != "stdio":
        return None
    named = given.get("--root") or environment(environ).get("LEDGER_ROOT")
    if not named:
        return None
    root = Path(named).expanduser().resolve()
    if not root.is_dir():
        return None
    data_dir = named_data_dir(environ, given.get("--data-dir"), root)
    assert data_dir is not None  # named, at the latest, by the root
    return root, data_dir


class Link:
    """One connection to a shared server, past the hello."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lines: BinaryIO = sock.makefile("rb")

    def open(self) -> bool:
        """Whether the server's end is still open (its last lines may be unread)."""
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    def close(self) -> None:
        for close in (self.lines.close, self.sock.close):
            try:
                close()
            except OSError:
                pass


class Finder:
    """Finds the project's shared server for this process's settings, starting one when none is up."""

    def __init__(self, root: Path, data_dir: Path, environ: Mapping[str, str]) -> None:
        self.root = root
        self.data_dir = data_dir
        self.environ = dict(environ)
        self.fingerprint = settings_fingerprint(environ)
        self.path = shared_server_path(data_dir, self.fingerprint)
        self._spawned: list[subprocess.Popen[bytes]] = []  # servers this proxy started, reaped once they exit

    def reap(self) -> None:
        """Collect the exit status of servers this proxy started that have ended, so that none stays a zombie."""
        self._spawned = [process for process in self._spawned if process.poll() is None]

    def link(self) -> Link:
        """A connection to a running shared server, started if need be; raises Unavailable."""
        self.reap()
        link = self._hello()
        if link is not None:
            return link
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            (self.data_dir / "logs").mkdir(exist_ok=True, mode=0o700)
        except OSError as exc:
            raise Unavailable(f"cannot use the data directory {self.data_dir}: {exc}") from None
        deadline = time.monotonic() + START_SECONDS
        try:  # one proxy at a time starts a server; the others find it up when they get the lock
            starting = FileLock.acquire_within(shared_server_path(self.data_dir, self.fingerprint, ".start"), START_SECONDS)
        except OSError as exc:
            raise Unavailable(f"cannot write the data directory {self.data_dir}: {exc}") from None
        if starting is None:
            raise Unavailable(f"another client has been starting the shared server for {START_SECONDS:g}s")
        try:
            return self._start(deadline)
        except OSError as exc:  # the log or the process could not be made
            raise Unavailable(f"the shared server could not be started: {exc}") from None
        finally:
            starting.release()

    def _start(self, deadline: float) -> Link:
        spawned: subprocess.Popen[bytes] | None = None
        while time.monotonic() < deadline:
            link = self._hello()
            if link is not None:
                return link
            if spawned is not None and spawned.poll() not in (None, 0):
                raise Unavailable(f"the shared server exited with code {spawned.returncode}; see {self.log_path}")
            owner = shared_server_path(self.data_dir, self.fingerprint, ".lock")  # held while a server starts, serves or lets go
            if (spawned is None or spawned.poll() is not None) and not FileLock.is_held(owner):
                spawned = self._spawn()
            time.sleep(0.05)
        raise Unavailable(f"the shared server did not answer within {START_SECONDS:g}s; see {self.log_path}")

    @property
    def log_path(self) -> Path:
        return self.data_dir / "logs" / "shared-server.log"

    def _spawn(self) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "project_ledger", "serve", "--shared-server", "--root", str(self.root)]
        with open(self.log_path, "ab") as log:
            process = subprocess.Popen(
                [*argv, "--data-dir", str(self.data_dir)], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                cwd=self.root, env=self.environ, start_new_session=True, close_fds=True,
            )  # fmt: skip
        self._spawned.append(process)
        return process

    def _hello(self) -> Link | None:
        """A connection to the server listening now, or None when none listens (or it is going away)."""
        if not self.path.exists():
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(HELLO_SECONDS)
            with address(self.path) as where:
                sock.connect(where)
            sock.sendall(json.dumps({"settings": self.fingerprint, "data_dir": str(self.data_dir)}).encode() + b"\n")
            link = Link(sock)
            answer = json.loads(link.lines.readline() or b"null")
        except (OSError, ValueError):
            sock.close()
            return None
        if not isinstance(answer, dict) or not answer.get("ok"):
            link.close()
            if isinstance(answer, dict) and isinstance(answer.get("refused"), str):
                raise Unavailable(f"the shared server refused: {answer['refused']}")
            return None
        sock.settimeout(None)
        return link


class Proxy:
    """Pumps the client's lines to the shared server and back (see the module for what happens when it dies)."""

    def __init__(self, finder: Finder, link: Link, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self.finder = finder
        self.stdin = stdin
        self.stdout = stdout
        self._state = threading.Lock()  # the link and the requests it owes answers to
        self._sending = threading.Lock()  # one sender at a time, and one reconnection
        self._writing = threading.Lock()
        self._link: Link | None = None
        self._pending: dict[str, Any] = {}  # JSON of a request id -> the id
        self._init_request: dict[str, Any] | None = None  # the client's initialize, as sent
        self._initialize: dict[str, Any] | None = None  # the same, once a server accepted it: what a new one is sent
        self._initialized: bytes | None = None
        self._init_id: str | None = None
        self._replay_id: str | None = None
        self._replayed = threading.Event()
        self._replays = 0
        self._readers: list[threading.Thread] = []
        self._attach(link)

    def run(self) -> None:
        for line in self.stdin:
            self._forward(line)
        with self._state:
            link = self._link
        if link is not None:  # the client is done: end the session, and pass on the answers still coming
            try:
                link.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        for reader in self._readers:
            reader.join(CLOSE_SECONDS)

    def _attach(self, link: Link) -> None:
        with self._state:
            self._link = link
        reader = threading.Thread(target=self._read, args=(link,), name="ledger-proxy-reader", daemon=True)
        self._readers = [r for r in self._readers if r.is_alive()] + [reader]
        reader.start()

    def _forward(self, line: bytes) -> None:
        message = _parsed(line)
        method = message.get("method") if message else None
        request_id = message.get("id") if message and method is not None else None
        if method == "initialize" and request_id is not None:
            self._init_request, self._init_id = message, json.dumps(request_id)
        if method == "notifications/initialized":
            self._initialized = line
        with self._sending:
            link = self._current()
            if link is not None and not link.open():  # it died, and its reader has not seen it yet
                self._lost(link)
                link = None
            if link is None:
                try:
                    link = self._reconnect()
                except Unavailable as exc:
                    if request_id is not None:
                        self._write(_error(request_id, f"the ledger's shared server is not reachable ({exc}). Retry the call."))
                    return
            with self._state:
                if self._link is not link:  # it died just now: answered as lost, like the others
                    if request_id is not None:
                        self._write(_error(request_id, _LOST))
                    return
                if request_id is not None:
                    self._pending[json.dumps(request_id)] = request_id
            try:
                link.sock.sendall(line if line.endswith(b"\n") else line + b"\n")
            except OSError:
                self._lost(link)

    def _current(self) -> Link | None:
        with self._state:
            return self._link

    def _reconnect(self) -> Link:
        """A new server, handshaken as the client had its old one (called with `_sending` held)."""
        link = self.finder.link()
        self._replayed.clear()
        init = self._initialize
        self._replays += 1
        self._replay_id = f"ledger-proxy-replay-{self._replays}"
        self._attach(link)
        try:
            if init is not None:
                link.sock.sendall(json.dumps({**init, "id": self._replay_id}).encode() + b"\n")
                if not self._replayed.wait(REPLAY_SECONDS) or self._current() is not link:
                    raise Unavailable("the new shared server did not answer the replayed initialize")
                if self._initialized is not None:
                    link.sock.sendall(self._initialized if self._initialized.endswith(b"\n") else self._initialized + b"\n")
        except (OSError, Unavailable) as exc:
            self._lost(link)
            raise Unavailable(str(exc)) from None
        return link

    def _read(self, link: Link) -> None:
        try:
            for line in link.lines:
                message = _parsed(line)
                answered = message.get("id") if message and "method" not in message else None
                if message and answered is not None:
                    key = json.dumps(answered)
                    if answered == self._replay_id:
                        self._replayed.set()
                        continue  # the client had its answer from the old server
                    with self._state:
                        self._pending.pop(key, None)
                    if key == self._init_id and "result" in message:
                        self._initialize = self._init_request
                self._write(line)
        except (OSError, ValueError):
            pass
        self._lost(link)

    def _lost(self, link: Link) -> None:
        """The server behind `link` is gone: every request it owed gets an error that says to retry."""
        with self._state:
            if self._link is not link:
                return
            self._link = None
            owed, self._pending = list(self._pending.values()), {}
        link.close()
        self.finder.reap()
        for request_id in owed:
            self._write(_error(request_id, _LOST))

    def _write(self, line: bytes) -> None:
        with self._writing:
            try:
                self.stdout.write(line if line.endswith(b"\n") else line + b"\n")
                self.stdout.flush()
            except (OSError, ValueError):  # the client stopped reading; it will close our stdin too
                pass


_LOST = (
    "the ledger's shared server stopped before answering this request, so it may or may not have been done "
    "(a write that was done is kept). Retry the call: a new server is started for it."
)


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def _error(request_id: Any, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": RETRY, "message": text}}).encode() + b"\n"


def serve_through_shared(args: list[str]) -> bool:
    """Run `serve <args>` as a proxy to the project's shared server: True once the client has closed. False, with
    nothing read from stdin, when it is not to be shared or no shared server can be had; `serve` then runs here."""
    target = shared_target(args, os.environ)
    if target is None or sys.stdin.isatty():  # started by hand: the full CLI says what it is waiting for
        return False
    finder = Finder(*target, os.environ)
    try:
        link = finder.link()
    except Unavailable as exc:
        sys.stderr.write(f"project-ledger: no shared server ({exc}); serving in this process\n")
        return False
    Proxy(finder, link, sys.stdin.buffer, sys.stdout.buffer).run()
    return True
