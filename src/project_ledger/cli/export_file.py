"""Writing an export to a file: readable by its owner alone from its first byte, and there whole or not at all."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TextIO, TypeVar

import click

T = TypeVar("T")


def write_privately(destination: Path, write: Callable[[TextIO], T]) -> T:
    """Run `write` on `<destination>.partial`, created with mode 600, sync it, then rename it to `destination`.

    The partial file is made anew (a crash's leftover may have wider permissions), and removed if anything fails,
    so a reader never finds half an export, and no other local account ever reads any of it.
    """
    partial = destination.with_name(destination.name + ".partial")
    try:
        partial.unlink(missing_ok=True)
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
            result = write(out)
            out.flush()
            os.fsync(out.fileno())
        partial.replace(destination)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise click.ClickException(f"could not write {destination}: {exc.strerror or exc}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return result
