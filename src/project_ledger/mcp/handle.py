"""The service for a long-running server, or, while it cannot be opened, the reason why.

A server whose data directory is read-only, missing or damaged at start still
completes the MCP handshake: its instructions and every tool call say what is
wrong, instead of the client seeing a process that died. Each call retries the
opening (at most once every few seconds), so the server recovers by itself once
the condition clears.

A server that has no project root yet (started outside any project, waiting for
the client's workspace roots) has no opener at all: calls say so, and nothing is
written anywhere. When the client names its root, or names another one later,
`switch` closes the open service once the calls still using it (`lease`) have
ended, and opens the one for that root; calls that come meanwhile wait for it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from project_ledger.errors import LedgerError, StorageError
from project_ledger.memory.service import LedgerService

RETRY_SECONDS = 3.0
SWITCH_WAIT_SECONDS = 30.0  # how long a switch waits for calls on the old service before closing it anyway


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
        self._changed = threading.Condition(self._lock)  # a lease ended, or a switch did
        self._leases: Counter[int] = Counter()  # id of a service -> calls using it
        self._switching = False
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
            return self._get()

    @contextmanager
    def lease(self) -> Iterator[LedgerService]:
        """The open service (as `get`), kept open until the block ends even if `switch` moves to another root."""
        with self._lock:
            ledger = self._get()
            self._leases[id(ledger)] += 1
        try:
            yield ledger
        finally:
            with self._lock:
                self._leases[id(ledger)] -= 1
                if not self._leases[id(ledger)]:
                    del self._leases[id(ledger)]
                    self._changed.notify_all()

    def _get(self) -> LedgerService:
        """`get`, with the lock held (and let go while a switch is under way)."""
        self._changed.wait_for(lambda: not self._switching)
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
        """Serve the project at `root` from now on; False if it is the one already served. The old service is
        closed once the calls using it have ended (a call past SWITCH_WAIT_SECONDS meets a closed service), before
        the new one opens: both may share a data directory (LEDGER_DATA_DIR)."""
        with self._lock:
            self._changed.wait_for(lambda: not self._switching)
            if root == self._root:
                return False
            old, self._ledger, self._root = self._ledger, None, root
            self._switching = True
            try:
                if old is not None:
                    self._changed.wait_for(lambda: not self._leases[id(old)], SWITCH_WAIT_SECONDS)
                    old.close()
                self._try_open()
                self._start_opened()
            finally:
                self._switching = False
                self._changed.notify_all()
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
