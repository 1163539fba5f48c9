"""What every CLI command shares: project options, one-line errors, and opening the service."""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from pydantic import ValidationError

from project_ledger.cli.terminal import say, visible
from project_ledger.config import Settings
from project_ledger.errors import LedgerError
from project_ledger.project_root import DATA_DIR_NAME, find_project_root, unsuitable

if TYPE_CHECKING:  # the services (and what they import) load when a command opens them, not with the CLI
    from project_ledger.maintenance.service import Services
    from project_ledger.memory.service import LedgerService

F = TypeVar("F", bound=Callable[..., Any])
NO_AUTH_HELP = "Serve without any token (loopback only): every local account can then read and erase the memories."
CLOSED_PIPE_STATUS = 141  # 128 + SIGPIPE (13 on Linux and macOS; Windows has no signal to name it)


class LedgerGroup(click.Group):
    """Any unexpected failure is one line naming it, with the way to see more; `--debug` shows the traceback.

    A reader that went away (`project-ledger status | head -1`) ends the command quietly, with the status a Unix
    tool killed by SIGPIPE has.

    Commands kept in other modules are named in `lazy` (name -> "module:attribute") and imported when
    called or listed, so that each command loads only its own module and what that imports.
    """

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module, attribute = self.lazy.pop(cmd_name).split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)  # the exit's own flush of stdout must not fail again
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(CLOSED_PIPE_STATUS) from None
        except Exception as exc:
            if (ctx.obj or {}).get("debug"):
                raise
            raise click.ClickException(
                visible(f"unexpected {type(exc).__name__}: {exc}. Nothing stored was lost; rerun with --debug for the traceback")
            ) from None


def project_options(fn: F) -> F:
    """`--root` and `--data-dir` on every command; the command receives the built `settings` instead."""
    return _project_options(fn, root_must_exist=True)


def serve_project_options(fn: F) -> F:
    """`project_options` for `serve`, whose `--root` may name no directory: the server still starts, so that the
    client gets the reason in its instructions and every tool result, not a broken pipe."""
    return _project_options(fn, root_must_exist=False)


def _project_options(fn: F, *, root_must_exist: bool) -> F:
    @click.option(
        "--root",
        type=click.Path(exists=root_must_exist, file_okay=False, path_type=Path),
        help="Project root (default: git top-level).",
    )
    @click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), help="Data directory (default: <root>/.ledger).")
    @functools.wraps(fn)
    def wrapper(*args: Any, root: Path | None, data_dir: Path | None, **kwargs: Any) -> Any:
        overrides = {key: value for key, value in {"root": root, "data_dir": data_dir}.items() if value is not None}
        try:
            settings = Settings(**overrides)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "settings"
            raise click.ClickException(f"invalid configuration: {where} (LEDGER_{where.upper()}): {error['msg']}") from None
        return fn(*args, settings=settings, **kwargs)

    return wrapper  # type: ignore[return-value]


def ledger_errors(fn: F) -> F:
    """Ledger errors become one readable line and exit code 1, not a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LedgerError as exc:
            raise click.ClickException(visible(str(exc))) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def opened_services(
    settings: Settings, *, index: bool = False, model: bool = False, code_search: bool = False
) -> Iterator[Services]:
    """The ledger and its maintenance over this project's data, as the factory builds them.

    With `index`, this process's index slot is opened and caught up. With
    `model`, the model is loaded and memories without a vector are embedded
    first, as a server would have done, so that a CLI recall is hybrid. With
    `code_search`, the symbol search index is opened too.
    """
    from project_ledger.factory import open_services

    check_found_root(settings)
    services = open_services(settings, Path.cwd())
    try:
        maintenance = services.maintenance
        if index:
            maintenance.open_index()  # raises, with the reason, if it could not open
        if model and maintenance.load_model():
            maintenance.embed_memories()
        if code_search:
            maintenance.open_code_search()
        yield services
    finally:
        services.close()


def check_found_root(settings: Settings) -> None:
    """Before a command opens a project it found by itself (no --root, --data-dir or LEDGER_ROOT): refuse the home
    directory and `/`, as `serve` and the hooks do, and say so on stderr when it is about to start a new ledger; a
    command run in the wrong folder would otherwise answer from an empty ledger as if it were the project's."""
    if settings.root is not None or settings.data_dir is not None:
        return
    cwd = Path.cwd().resolve()
    root = find_project_root(cwd)
    if reason := unsuitable(root):
        raise click.ClickException(f"{reason}; run this inside a project, or name it with --root")
    if not (root / DATA_DIR_NAME).exists():
        where = "here" if root == cwd else f"in {root}, the project of {cwd}"
        say(
            f"no ledger yet {where}: starting a new one in {root / DATA_DIR_NAME} (`project-ledger init` sets a project "
            "up; --root names another project)",
            err=True,
        )


@contextmanager
def opened(settings: Settings, *, index: bool = False, model: bool = False, code_search: bool = False) -> Iterator[LedgerService]:
    """The ledger service alone, for the commands that only use it (see `opened_services`)."""
    with opened_services(settings, index=index, model=model, code_search=code_search) as services:
        yield services.ledger
