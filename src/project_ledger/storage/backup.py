"""The export format: one JSON object per line, a header first, then every memory in the order it was stored.

A line holds every column the journal keeps for a memory, its code links and
what it was derived from, so an export read back into an empty ledger gives the
same export again. Forgotten memories travel as tombstones (id, kind, dates, an
empty text), so a forget survives a restore or a move to another backend. Dense
vectors are not exported: they are derived from the text and the configured
model, and the importing ledger computes them in the background.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from project_ledger.errors import InvalidArgument
from project_ledger.models import Kind, Memory

FORMAT: Final = "project-ledger-export"
VERSION: Final = 1


class TextSink(Protocol):
    """Where an export goes: a text file, or the CLI's writer that counts the lines on their way to one."""

    def write(self, text: str, /) -> int: ...


class ExportHeader(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    format: Literal["project-ledger-export"]
    version: Literal[1]
    exported_at: str
    journal_id: str
    memories: int = Field(ge=0)
    tombstones: int = Field(ge=0)


class ExportedLink(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    target: Literal["file", "symbol"]
    path: str
    name: str
    hash: str | None


class ExportedSource(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(min_length=1)
    relation: Literal["captured", "cites", "covers"]


class ExportedMemory(Memory):
    """One memory as exported: every journal column (`Memory`), its code links and its sources; a tombstone has
    `deleted_at` and an empty text. Unknown keys are refused, so an edited or foreign line imports nothing."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(min_length=1, max_length=64)
    kind: Kind
    access_count: int = Field(default=0, ge=0)
    links: list[ExportedLink]
    sources: list[ExportedSource]


def write_export(header: ExportHeader, memories: Iterable[ExportedMemory], out: TextSink) -> None:
    out.write(header.model_dump_json() + "\n")
    for memory in memories:
        out.write(memory.model_dump_json() + "\n")


def read_export(lines: Iterable[str]) -> tuple[ExportHeader, list[ExportedMemory]]:
    """Parse and check a whole export before anything is written, so a damaged file imports nothing."""
    numbered: Iterator[tuple[int, str]] = ((n, line) for n, line in enumerate(lines, start=1) if line.strip())
    first = next(numbered, None)
    if first is None:
        raise InvalidArgument("the export is empty: expected a header line and one line per memory")
    try:
        header = ExportHeader.model_validate_json(first[1])
    except ValidationError:
        raise InvalidArgument(
            f"line {first[0]} is not a project-ledger export header (format {FORMAT!r}, version {VERSION}); "
            "was the file written by `project-ledger export`?"
        ) from None
    memories: list[ExportedMemory] = []
    for number, line in numbered:
        try:
            memories.append(ExportedMemory.model_validate_json(line))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "line"
            raise InvalidArgument(f"line {number} of the export is not a valid memory ({where}: {error['msg']}); nothing was imported") from None
    if len(memories) != header.memories + header.tombstones:
        raise InvalidArgument(
            f"the export's header promises {header.memories + header.tombstones} memories but {len(memories)} follow; "
            "the file is truncated or was edited, so nothing was imported"
        )
    ids = [memory.id for memory in memories]
    if len(set(ids)) != len(ids):
        raise InvalidArgument("the export holds the same memory id twice; nothing was imported")
    return header, memories
