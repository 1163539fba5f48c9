"""`serve`'s side of the hooks' short way: it answers the hooks of the project it serves on its local socket.

While the agent's session is up, its `serve` has the journal, the index and the tokenizer open; a hook sent here
is handled by the same code as a hook that works alone (`cli/hooks.run_hook`), on the server's ledger, and the
answer goes back once the journal write is committed. The server declines (and the hook works alone) when it runs
with other `LEDGER_*` settings than the hook, or when the hook's ledger is not the one it serves.

The socket follows the served project: a server that switches projects (the client's roots) moves its socket,
and one that cannot open its ledger listens nowhere. A second server on the same project finds the socket taken
and checks again every few seconds, taking it over when the first one exits.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from project_ledger.cli.hook_client import CLIENTS
from project_ledger.cli.hooks import Declined, run_hook
from project_ledger.errors import LedgerError
from project_ledger.local_socket import Listener, settings_fingerprint

if TYPE_CHECKING:
    from project_ledger.config import Settings
    from project_ledger.memory.conversation import HookEvent
    from project_ledger.memory.service import LedgerService

log = logging.getLogger(__name__)
FOLLOW_SECONDS = 2.0  # how often the socket checks which project is served, and whether it may listen


def hook_answer(request: dict[str, Any], served: Callable[[], LedgerService], fingerprint: str) -> dict[str, Any]:
    """The answer to one request on the socket: `{"output": ...}` (what the hook prints, the event handled and
    logged as the hook would have), `{"declined": why}` or `{"error": why}` (the hook then works alone)."""
    if request.get("kind") != "hook" or request.get("client") not in CLIENTS or not isinstance(request.get("input"), str):
        return {"error": f"a request must be {{'kind': 'hook', 'client': one of {', '.join(CLIENTS)}, 'input': the hook's JSON}}"}
    if request.get("settings") != fingerprint:
        return {"declined": "the hook runs with other LEDGER_* settings than this server"}
    option = request.get("data_dir")
    if option is not None and not isinstance(option, str):
        return {"error": "'data_dir' must be a path or null"}

    @contextmanager
    def on_the_served_ledger(_settings: Settings, _event: HookEvent, data_dir: Path) -> Iterator[tuple[LedgerService, Callable[[], None]]]:
        try:
            ledger = served()
        except LedgerError as exc:
            raise Declined(f"this server's ledger is not open: {exc}") from None
        if ledger.paths.data_dir != data_dir:
            raise Declined(f"this server serves {ledger.paths.data_dir}, not {data_dir}")
        yield ledger, lambda: None  # the server's index is open, and a search catches it up first

    try:
        output = run_hook(request["input"].encode(), Path(option) if option else None, request["client"], on_the_served_ledger)
    except Declined as exc:
        return {"declined": str(exc)}
    return {"output": output}


class HookSocket:
    """Listens on the served project's socket from `start()` to `stop()`, following the project served."""

    def __init__(self, served: Callable[[], LedgerService]) -> None:
        self._served = served
        self._fingerprint = settings_fingerprint(os.environ)
        self._listener: Listener | None = None
        self._warned: Path | None = None  # the data directory whose socket could not be made: said once
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="ledger-hook-socket", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _follow(self) -> None:
        while not self._stopped.is_set():
            try:
                data_dir: Path | None = self._served().paths.data_dir
            except LedgerError:
                data_dir = None
            current = self._listener
            if current is not None and current.data_dir != data_dir:
                current.close()
                self._listener = current = None
            if current is None and data_dir is not None and not self._stopped.is_set():
                listener = Listener(data_dir, lambda request: hook_answer(request, self._served, self._fingerprint))
                try:
                    if listener.open():
                        self._listener = listener
                        log.info("answering hooks on %s", listener.path)
                except OSError as exc:
                    if self._warned != data_dir:
                        log.warning("hooks cannot reach this server (%s): each hook works alone", exc)
                    self._warned = data_dir
            self._stopped.wait(FOLLOW_SECONDS)


@contextmanager
def answering_hooks(served: Callable[[], LedgerService]) -> Iterator[None]:
    """While the block runs, the served project's hooks are answered on its socket."""
    socket = HookSocket(served)
    socket.start()
    try:
        yield
    finally:
        socket.stop()
