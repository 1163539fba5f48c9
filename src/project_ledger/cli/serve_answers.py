"""`serve`'s side of the short way: it answers the hooks, and CLI recalls and remembers, of the project it serves on
its local socket (`cli/fast_path.py` is the other side).

While the agent's session is up, its `serve` has the journal, the index, the tokenizer and the model open. A hook
sent here is handled by the same code as a hook that works alone (`cli/hook_run.run_hook`), on the server's ledger,
and the answer goes back once the journal write is committed; a recall or a remember is the ledger's own method,
and a remember's answer, too, goes back only once its journal write is committed. The server
declines (and the caller works alone) when it runs with other `LEDGER_*` settings than the caller, or when the
caller's ledger is not the one it serves.

The socket follows the served project: a server that switches projects (the client's roots) moves its socket,
and one that cannot open its ledger listens nowhere. A second server on the same project finds the socket taken
and checks again every few seconds, taking it over when the first one exits.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from project_ledger.cli.hook_run import Declined, run_hook
from project_ledger.errors import LedgerError
from project_ledger.hooks.clients import HOOK_CLIENTS
from project_ledger.local_socket import Listener, settings_fingerprint

if TYPE_CHECKING:
    from project_ledger.config import Settings
    from project_ledger.hooks.event import HookEvent
    from project_ledger.memory.service import LedgerService

log = logging.getLogger(__name__)
# The served ledger, kept open until the block ends even if the server switches projects (`LedgerHandle.lease`): a
# switch closes the old ledger only once the requests using it are answered.
Served = Callable[[], AbstractContextManager["LedgerService"]]
FOLLOW_SECONDS = 2.0  # how often the socket checks which project is served, and whether it may listen


# The ledger methods the CLI may call here, with the arguments each takes.
LEDGER_CALLS = {
    "recall": frozenset({"query", "k", "kinds", "tags", "since", "until", "min_relevance"}),
    "remember": frozenset({"text", "kind", "tags", "session", "pinned", "supersedes"}),
}
KINDS = ("hook", *LEDGER_CALLS)


def answer(request: dict[str, Any], served: Served, fingerprint: str) -> dict[str, Any]:
    """The answer to one request on the socket (see `hook_answer` and `ledger_answer`); `{"declined": why}` or
    `{"error": why}` send the caller to do its own work."""
    kind = request.get("kind")
    if kind not in KINDS:
        return {"error": f"a request's 'kind' must be one of {', '.join(repr(k) for k in KINDS)}"}
    if request.get("settings") != fingerprint:
        return {"declined": f"the {kind} runs with other LEDGER_* settings than this server"}
    return hook_answer(request, served) if kind == "hook" else ledger_answer(kind, request, served)


def ledger_answer(kind: str, request: dict[str, Any], served: Served) -> dict[str, Any]:
    """`{"result": ...}`, the served ledger's `recall` or `remember` as JSON, or `{"failed": why}` when the ledger
    refuses the arguments (the CLI says why, as it would have itself). A remember is answered once it is committed."""
    allowed = LEDGER_CALLS[kind]
    arguments, data_dir = request.get("arguments"), request.get("data_dir")
    if not isinstance(arguments, dict) or not isinstance(data_dir, str) or not set(arguments) <= allowed:
        return {"error": f"a {kind} request needs 'data_dir' (a path) and 'arguments' (some of {', '.join(sorted(allowed))})"}
    with ExitStack() as held:
        try:
            ledger = held.enter_context(served())
        except LedgerError as exc:
            return {"declined": f"this server's ledger is not open: {exc}"}
        if ledger.paths.data_dir != Path(data_dir):
            return {"declined": f"this server serves {ledger.paths.data_dir}, not {data_dir}"}
        ledger.release_start()
        if kind == "remember" and not ledger.index_ready():  # the command alone checks near-duplicates in a slot of its own
            return {"declined": "this server's search index is not open, so it would skip the near-duplicate check"}
        call = ledger.recall if kind == "recall" else ledger.remember
        try:
            return {"result": call(**arguments).model_dump(mode="json")}
        except LedgerError as exc:
            return {"failed": str(exc)}
        except TypeError as exc:  # an argument of the wrong type
            return {"error": f"bad {kind} arguments: {exc}"}


def hook_answer(request: dict[str, Any], served: Served) -> dict[str, Any]:
    """`{"output": ...}`: what the hook prints, the event handled and logged as the hook would have; or
    `{"declined": why}`."""
    if request.get("client") not in HOOK_CLIENTS or not isinstance(request.get("input"), str):
        return {"error": f"a hook request needs 'client' (one of {', '.join(HOOK_CLIENTS)}) and 'input' (the hook's JSON)"}
    option, here = request.get("data_dir"), request.get("cwd")
    if option is not None and not isinstance(option, str):
        return {"error": "'data_dir' must be a path or null"}
    if here is not None and not isinstance(here, str):
        return {"error": "'cwd' must be the hook's folder or null"}

    @contextmanager
    def on_the_served_ledger(_settings: Settings, _event: HookEvent, data_dir: Path) -> Iterator[tuple[LedgerService, Callable[[], None]]]:
        with ExitStack() as held:
            try:
                ledger = held.enter_context(served())
            except LedgerError as exc:
                raise Declined(f"this server's ledger is not open: {exc}") from None
            if ledger.paths.data_dir != data_dir:
                raise Declined(f"this server serves {ledger.paths.data_dir}, not {data_dir}")
            try:
                yield ledger, lambda: None  # the server's index is open, and a search catches it up first
            finally:
                ledger.release_start()  # the start-up's held part (the model, the code index) waited for this

    try:
        output = run_hook(
            request["input"].encode(), Path(option) if option else None, request["client"], on_the_served_ledger, Path(here) if here else None
        )
    except Declined as exc:
        return {"declined": str(exc)}
    return {"output": output}


class HookSocket:
    """Listens on the served project's socket from `start()` to `stop()`, following the project served."""

    def __init__(self, served: Served) -> None:
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
                with self._served() as ledger:
                    data_dir: Path | None = ledger.paths.data_dir
            except LedgerError:
                data_dir = None
            current = self._listener
            if current is not None and current.data_dir != data_dir:
                current.close()
                self._listener = current = None
            if current is None and data_dir is not None and not self._stopped.is_set():
                listener = Listener(data_dir, lambda request: answer(request, self._served, self._fingerprint))
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
def answering_hooks(served: Served) -> Iterator[None]:
    """While the block runs, the served project's hooks and recalls are answered on its socket."""
    socket = HookSocket(served)
    socket.start()
    try:
        yield
    finally:
        socket.stop()
