"""One MCP server for every stdio client of a project: each client's proxy (`cli/mcp_proxy.py`) connects to it on a
local socket, and each connection is its own MCP session.

The server holds the one journal connection, index slot and embedding model the project needs, however many
clients (Claude Code, Cursor, a second terminal) are open on it. What belongs to a session stays on its
connection: the handshake, the client's name and capabilities, the requests it is answering (sampling), and the
session-start pack in its instructions, worked out when that session opens. Nothing a session writes waits on
this process: every write is committed to the journal before its answer is sent, as with a server of its own.

A connection opens with one line of JSON from the proxy, `{"settings": <fingerprint>, "data_dir": <path>}`, and
the server answers `{"ok": true, "pid": <pid>}` or `{"refused": <why>}`; then MCP's JSON-RPC lines go both ways,
screened as over stdio (`mcp/stdio.py`) so that an unreadable line is answered, not dropped. Only the owner's
account may connect (the socket is mode 600 in the private data directory, and the peer's user is checked).

Who serves is settled by the lock file beside the socket (`local_socket.shared_server_path`): its holder owns the
socket path. The server exits once it has had no connection for LEDGER_SHARED_IDLE_SECONDS; it stops listening
and lets go of the lock first, so that a proxy arriving then starts the next one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types
from mcp.shared.message import SessionMessage

from project_ledger.file_lock import FileLock
from project_ledger.local_socket import listen_at, same_user, shared_server_path
from project_ledger.mcp import sdk
from project_ledger.mcp.arguments import LedgerServer
from project_ledger.mcp.stdio import screen

log = logging.getLogger(__name__)

HELLO_SECONDS = 10.0  # the proxy's first line, and the server's answer
OWNER_WAIT_SECONDS = 30.0  # a server that is closing lets go of the lock in that time
FIRST_CLIENT_SECONDS = 30.0  # a server started for a proxy that died before it connected does not stay long
LINE_LIMIT = 256 << 20  # MCP lines are unbounded over stdio; this only stops a runaway


class SharedServer:
    """The listener and its sessions, from `serve()` until it has been idle long enough."""

    def __init__(self, app: LedgerServer, data_dir: Path, fingerprint: str, idle_seconds: float) -> None:
        self.app = app
        self.data_dir = data_dir
        self.fingerprint = fingerprint
        self.idle_seconds = idle_seconds
        self.path = shared_server_path(data_dir, fingerprint)
        self._lock: FileLock | None = None
        self._connections = 0
        self._served = False
        self._started = self._quiet_since = time.monotonic()
        self._state: Any = None

    async def serve(self) -> None:
        if not await anyio.to_thread.run_sync(self._own):
            log.info("another shared server owns %s; leaving it to that one", self.path)
            return
        try:
            listening = listen_at(self.path, 64)  # the lock is ours: a socket file left here is a dead server's
            async with sdk.lifespan(self.app) as state:
                self._state = state
                server = await asyncio.start_unix_server(self._session, sock=listening, limit=LINE_LIMIT)
                log.info("shared server %d listening on %s", os.getpid(), self.path)
                await self._until_idle(self.idle_seconds)
                self._stop_listening(server)
                await self._until_idle(0.0)  # a client accepted just before: its session ends first
        finally:
            self._release()
        log.info("shared server %d stopped: no client for %gs", os.getpid(), self.idle_seconds)

    def _own(self) -> bool:
        """Take the owner's lock (waiting for a server that is closing), and write this pid into it."""
        lock = FileLock.acquire_within(shared_server_path(self.data_dir, self.fingerprint, ".lock"), OWNER_WAIT_SECONDS, 0.1)
        if lock is None:
            return False
        lock.record(str(os.getpid()))
        self._lock = lock
        return True

    def _stop_listening(self, server: asyncio.Server) -> None:
        self.path.unlink(missing_ok=True)  # first, so that no new client finds it
        server.close()
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    async def _until_idle(self, idle: float) -> None:
        """Until no client has been connected for `idle` seconds (and the one it was started for has come, or
        will not)."""
        while True:
            now = time.monotonic()
            waited = self._served or now - self._started >= FIRST_CLIENT_SECONDS
            if self._connections == 0 and now - self._quiet_since >= idle and waited:
                return
            await anyio.sleep(min(1.0, max(idle, 0.05)))

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        self._served = True
        try:
            if not same_user(writer.get_extra_info("socket")):
                await _send_line(writer, {"refused": "this socket answers its owner's processes only"})
                return
            try:
                hello = json.loads(await asyncio.wait_for(reader.readline(), HELLO_SECONDS))
            except (TimeoutError, ValueError, OSError):
                return
            why = self._refusal(hello)
            await _send_line(writer, {"refused": why} if why else {"ok": True, "pid": os.getpid()})
            if why is None:
                await self._mcp(reader, writer)
        except (OSError, asyncio.IncompleteReadError):  # the proxy went away: its session ends with it
            pass
        except Exception:
            log.exception("a shared session failed")
        finally:
            self._connections -= 1
            self._quiet_since = time.monotonic()
            writer.close()

    def _refusal(self, hello: Any) -> str | None:
        if not isinstance(hello, dict):
            return "the first line must be a JSON object with 'settings' and 'data_dir'"
        if hello.get("settings") != self.fingerprint:
            return "this server runs with other LEDGER_* settings than the client's proxy"
        if hello.get("data_dir") != str(self.data_dir):
            return f"this server serves {self.data_dir}, not {hello.get('data_dir')}"
        return None

    async def _mcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One MCP session over the connection, read and written as stdio's transport does."""
        options = sdk.initialization_options(self.app)
        # this session's pack, not the one from when the server started
        options = options.model_copy(update={"instructions": await anyio.to_thread.run_sync(self.app.instructions_now)})
        incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        replies, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        forward, screened = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def read() -> None:
            async with incoming_send:
                while line := await reader.readline():
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace"), by_name=False)
                    except Exception as exc:  # noqa: BLE001 - answered by the screen, as over stdio
                        await incoming_send.send(exc)
                        continue
                    await incoming_send.send(SessionMessage(message))

        async def write() -> None:
            async with outgoing:
                async for item in outgoing:
                    writer.write((item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())
                    await writer.drain()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            tasks.start_soon(screen, incoming, forward, replies)
            await sdk.serve_session(self.app, screened, replies, self._state, options)
            tasks.cancel_scope.cancel()


async def _send_line(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    writer.write(json.dumps(message).encode() + b"\n")
    await writer.drain()


async def serve_shared(app: LedgerServer, data_dir: Path, fingerprint: str, idle_seconds: float) -> None:
    """Serve `app` to every proxy of the project at `data_dir` with these settings, until idle (see the module)."""
    await SharedServer(app, data_dir, fingerprint, idle_seconds).serve()
