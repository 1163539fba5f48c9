"""`project-ledger hook CLIENT`: the conversation reaches the ledger without the agent calling a tool.

A hook runs inside the user's session, so it never fails it: whatever goes wrong (bad JSON, a missing
transcript, a locked journal, a read-only disk), it exits 0, prints nothing, and writes one line to
`<data dir>/logs/hooks.log`. Every run, good or bad, leaves that line; `doctor` reads the last one. Imports are
made on use: a hook process pays only for what its event needs, and never for click (the entry point runs a hook
here without the CLI; `cli/hooks.py` holds its commands). What differs between clients is their adapter's
(`hooks/clients/`). The running server handles a hook with the same `run_hook`, on its own ledger
(`cli/serve_answers.py`).
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from project_ledger.hooks.clients import HOOK_CLIENTS
from project_ledger.hooks.event import HookEvent
from project_ledger.hooks.log import HookRun, log_hook

if TYPE_CHECKING:
    from project_ledger.config import Settings
    from project_ledger.memory.service import LedgerService


def hook_settings(data_dir: Path | None) -> Settings:
    """The environment's settings for a hook: no code index (a hook never reads code), and a short wait for the
    journal's write lock. Built once per environment: reading them takes a server answering hooks tens of ms."""
    import os

    from project_ledger.local_socket import settings_environment

    return _hook_settings(data_dir, settings_environment(os.environ))


@functools.lru_cache(maxsize=8)
def _hook_settings(data_dir: Path | None, _environment: tuple[tuple[str, str], ...]) -> Settings:
    """`hook_settings` for one environment (the key; the settings read it from os.environ)."""
    from project_ledger.config import Settings

    settings = Settings(**({"data_dir": data_dir} if data_dir is not None else {}))
    return settings.model_copy(update={"code_index": False, "watch": False, "journal_wait_seconds": settings.hook_wait_seconds})


class Declined(Exception):
    """The running server does not answer this hook (it serves another data directory, or none now): the hook
    does its own work."""


# What a hook works on: the project's ledger, and how to open its index for a search.
Opener = Callable[["Settings", "HookEvent", Path], AbstractContextManager[tuple["LedgerService", Callable[[], None]]]]


@contextmanager
def opened_here(settings: Settings, event: HookEvent, data_dir: Path) -> Iterator[tuple[LedgerService, Callable[[], None]]]:
    """This process opens the ledger itself: the journal now, its index slot (BM25 alone) when a prompt searches."""
    from project_ledger.factory import open_services

    services = open_services(settings, event.cwd)
    try:
        yield services.ledger, lambda: services.maintenance.open_index(bm25_only=True)
    finally:
        services.close()


def run_alone(raw: bytes, client_name: str, data_dir_option: Path | None) -> str:
    """A hook no server answered, in this process: `run_hook` on the ledger it opens, logging as the CLI sets it up."""
    import logging

    from project_ledger.cli.early_options import LOG_FORMAT

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format=LOG_FORMAT)
    return run_hook(raw, data_dir_option, client_name)


def run_hook(raw: bytes, data_dir_option: Path | None, client_name: str, opener: Opener = opened_here, here: Path | None = None) -> str:
    """Handle one hook call of the client named `client_name` (one of `HOOK_CLIENTS`), run in the folder `here`
    (default: this process's), on the ledger `opener` gives; returns what to print (possibly nothing). Never
    raises, but `Declined` from the opener."""
    started = time.perf_counter()
    name, session, data_dir = "-", "-", data_dir_option
    pack_source: dict[str, Any] | None = None
    pack: tuple[str, list[str]] | None = None  # a session-start answer made now, and the memories it holds
    try:
        from dataclasses import replace

        from project_ledger.config import resolve_paths
        from project_ledger.memory.conversation import Conversation, HookParams
        from project_ledger.start_pack import keep

        try:
            payload: Any = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"hook input is not JSON ({exc})") from None
        client = HOOK_CLIENTS[client_name]
        event = client.parse(payload, here or Path.cwd())
        name, session = client.log_name(payload), event.session
        settings = hook_settings(data_dir_option)
        if settings.root is None:  # as `serve` finds it: a folder of a project, never the home directory or /
            from project_ledger.errors import InvalidArgument
            from project_ledger.project_root import from_working_directory

            choice = from_working_directory(event.cwd)
            if choice.root is None:
                raise InvalidArgument(f"{choice.reason}; nothing recorded")
            settings = settings.model_copy(update={"root": choice.root})
        data_dir = resolve_paths(settings, event.cwd).data_dir
        with opener(settings, event, data_dir) as (ledger, open_index):
            params = HookParams(
                start_tokens=settings.hook_start_tokens,
                inject_tokens=settings.hook_inject_tokens if client.injects else 0,
                inject_floor=settings.hook_inject_floor,
                record=settings.hook_record,
            )
            conversation = Conversation(ledger, params, open_index)
            # The session-start pack is kept for the next start (`start_pack`): read what it is made from first.
            if client.start_of(payload) is not None:
                pack_source = _pack_source(ledger)
            outcome = conversation.handle(event)
            if pack_source is not None and outcome.context:
                pack = (client.render(event, outcome.context), outcome.handed)
            if client.keeps_start_pack and event.name == "SessionEnd":  # the next start's pack, made while nothing waits
                pack_source = _pack_source(ledger)
                starting = replace(event, name="SessionStart", source="startup")
                made = conversation.start_pack(starting)
                pack = (client.render(starting, made.context), made.handed)
        output = client.render(event, outcome.context)
        if pack_source is not None and pack is not None:
            keep(data_dir, pack_source, *pack)
        details = [f"stored={outcome.stored}", f"injected={','.join(outcome.injected) or 0}", *outcome.notes]
        state = "ok"
    except Declined:
        raise
    except BaseException as exc:  # noqa: BLE001 - a hook must not fail the session, whatever happened
        output, state = "", "error"
        details = [f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]]
        if isinstance(exc, KeyboardInterrupt):
            details.append("interrupted")
    if data_dir is None:  # input too broken to name its project: the client runs hooks in the project's folder
        data_dir = _data_dir_in(here or Path.cwd())
    elapsed = round((time.perf_counter() - started) * 1000)
    served = opener is not opened_here  # answered by the running server, over its socket
    log_hook(data_dir, HookRun(state, name, str(session), elapsed, served, " ".join(details)))
    return output


def _pack_source(ledger: LedgerService) -> dict[str, Any] | None:
    """What a session-start pack made now on `ledger` is made from (`start_pack.made_from`)."""
    import os

    from project_ledger.local_socket import settings_fingerprint
    from project_ledger.start_pack import made_from

    return made_from(ledger.paths, settings_fingerprint(os.environ))


def _data_dir_in(folder: Path) -> Path | None:
    """The data directory of the project the hook ran in (a server answering it runs elsewhere)."""
    try:
        from project_ledger.config import resolve_paths

        return resolve_paths(hook_settings(None), folder).data_dir
    except Exception:  # noqa: BLE001 - only for the log line's place
        return None
