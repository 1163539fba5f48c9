"""The service for a long-running server, or, while it cannot be opened, the reason why.

A server whose data directory is read-only, missing or damaged at start still
completes the MCP handshake: its instructions and every tool call say what is
wrong, instead of the client seeing a process that died. Each call retries the
opening (at most once every few seconds), so the server recovers by itself once
the condition clears.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .errors import LedgerError, StorageError
from .ledger import LedgerService

RETRY_SECONDS = 3.0


class LedgerHandle:
    def __init__(self, open_ledger: Callable[[], LedgerService]) -> None:
        self._open_ledger = open_ledger
        self._lock = threading.Lock()
        self._ledger: LedgerService | None = None
        self._error: str | None = None
        self._tried_at = 0.0
        self._started = False
        self._try_open()

    def _try_open(self) -> None:
        self._tried_at = time.monotonic()
        try:
            self._ledger = self._open_ledger()
        except LedgerError as exc:
            self._error = str(exc)

    @property
    def error(self) -> str | None:
        """Why the service is not open, or None when it is."""
        return None if self._ledger is not None else self._error

    def get(self) -> LedgerService:
        """The open service; retries the opening when it failed, else raises the reason."""
        with self._lock:
            if self._ledger is None and time.monotonic() - self._tried_at >= RETRY_SECONDS:
                self._try_open()
                if self._ledger is not None and self._started:
                    self._ledger.start()
            if self._ledger is None:
                raise StorageError(f"the ledger is not available: {self._error} It is retried on every call.")
            return self._ledger

    def start(self) -> None:
        with self._lock:
            self._started = True
            if self._ledger is not None:
                self._ledger.start()

    def close(self) -> None:
        with self._lock:
            if self._ledger is not None:
                self._ledger.close()
