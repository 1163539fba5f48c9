"""The service for a long-running server, or, while it cannot be opened, the reason why.

A server whose data directory is read-only, missing or damaged at start still
completes the MCP handshake: its instructions and every tool call say what is
wrong, instead of the client seeing a process that died. Each call retries the
opening (at most once every few seconds), so the server recovers by itself once
the condition clears.

A server that has no project root yet (started outside any project, waiting for
the client's workspace roots) has no opener at all: calls say so, and nothing is
written anywhere. When the client names its root, or names another one later,
`switch` closes the open service and opens the one for that root.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from project_ledger.errors import LedgerError, StorageError
from project_ledger.memory.service import LedgerService

RETRY_SECONDS = 3.0


class LedgerHandle:
    def __init__(
        self,
        open_ledger: Callable[[Path], LedgerService],
        root: Path | None,
        no_root_reason: str = "",
        hold: Callable[[Path], float] = lambda _root: 0.0,
    ) -> None:
        """`hold` gives, for a project root, how long the service's start-up holds its heavy part back for the
        first hook or call (`LedgerService.start`)."""
        self._open_ledger = open_ledger
        self._hold = hold
        self._lock = threading.Lock()
        self._root = root
        self._ledger: LedgerService | None = None
        self._error: str | None = None if root else f"no project root: {no_root_reason}."
        self._tried_at = 0.0
        self._started = False
        if root is not None:
            self._try_open()

    def _try_open(self) -> None:
        assert self._root is not None
        self._tried_at = time.monotonic()
        try:
            self._ledger = self._open_ledger(self._root)
            self._ledger.expect_start()
        except LedgerError as exc:
            self._error = str(exc)

    @property
    def root(self) -> Path | None:
        return self._root

    @property
    def error(self) -> str | None:
        """Why the service is not open, or None when it is."""
        return None if self._ledger is not None else self._error

    def get(self) -> LedgerService:
        """The open service; retries the opening when it failed, else raises the reason."""
        with self._lock:
            if self._ledger is None and self._root is None:
                raise StorageError(
                    f"{self._error} Start the server with --root <project directory>, or use a client that shares its "
                    "workspace (MCP roots). Nothing is stored until then."
                )
            if self._ledger is None and time.monotonic() - self._tried_at >= RETRY_SECONDS:
                self._try_open()
                self._start_opened()
            if self._ledger is None:
                raise StorageError(f"the ledger is not available: {self._error} It is retried on every call.")
            return self._ledger

    def switch(self, root: Path) -> bool:
        """Serve the project at `root` from now on; False if it is the one already served."""
        with self._lock:
            if root == self._root:
                return False
            old, self._ledger, self._root = self._ledger, None, root
            if old is not None:
                old.close()
            self._try_open()
            self._start_opened()
            return True

    def start(self) -> None:
        with self._lock:
            self._started = True
            self._start_opened()

    def _start_opened(self) -> None:
        """Start the open service, once the server has started (the caller holds the lock)."""
        if self._ledger is not None and self._started and self._root is not None:
            self._ledger.start(self._hold(self._root))

    def close(self) -> None:
        with self._lock:
            if self._ledger is not None:
                self._ledger.close()
