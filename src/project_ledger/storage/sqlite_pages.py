"""The rows of a SQLite file read page by page, without its schema or its b-tree's upper pages.

When the pages that describe the tables (the schema) or that lead to the rows
(interior pages) are damaged or cut off, SQL reads nothing under them, yet the
leaf pages that hold the rows may be whole. This reads every table leaf page of
the file as the file format documents it (https://www.sqlite.org/fileformat2.html):
each cell's rowid and record, following overflow pages for long values. Which
table a row belongs to is not known here; the caller recognises rows by shape.
A page or cell that does not parse is skipped; a cell whose overflow chain
leaves the file (or meets a page that is not part of it) comes back cut short,
with the values its pages still hold.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

Value = int | float | str | bytes | None
TABLE_LEAF = 13


@dataclass(frozen=True)
class ScannedRow:
    """A row of some table: its rowid, how many columns its record has, and the values read (all of them if `whole`;
    else those before the cut)."""

    rowid: int
    columns: int
    values: list[Value]
    whole: bool


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A SQLite varint at `at`: its value and where it ends."""
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


def _decode(record: bytes, encoding: str) -> tuple[int, list[Value]]:
    """The number of columns in the record's header, and the values its body holds whole, in order."""
    header_size, at = _varint(record, 0)
    types = []
    while at < header_size:
        serial, at = _varint(record, at)
        types.append(serial)
    if at != header_size:
        raise ValueError("the record header overruns itself")
    values: list[Value] = []
    body = header_size
    for serial in types:
        width = (0, 1, 2, 3, 4, 6, 8, 8, 0, 0)[serial] if serial < 10 else (serial - 12) // 2
        if serial in (10, 11):
            raise ValueError(f"serial type {serial} is reserved")
        if body + width > len(record):
            break
        if serial == 0:
            values.append(None)
        elif serial in (8, 9):
            values.append(serial - 8)
        elif serial <= 6:
            values.append(int.from_bytes(record[body : body + width], "big", signed=True))
        elif serial == 7:
            values.append(struct.unpack(">d", record[body : body + 8])[0])
        else:
            chunk = record[body : body + width]
            values.append(chunk.decode(encoding) if serial % 2 else bytes(chunk))
        body += width
    return len(types), values


def scan(path: Path) -> list[ScannedRow]:
    """Every row of every table leaf page of the SQLite file at `path` that parses (see the module's docstring)."""
    data = path.read_bytes()
    if len(data) < 100 or not data.startswith(b"SQLite format 3\x00"):
        return []
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    usable = page_size - data[20]
    encoding = {1: "utf-8", 2: "utf-16-le", 3: "utf-16-be"}.get(int.from_bytes(data[56:60], "big"), "utf-8")
    found = []
    claimed: set[int] = set()  # overflow pages a cell's chain took: each is walked once, so the scan stays linear
    for number in range(1, len(data) // page_size + 1):
        page = data[(number - 1) * page_size : number * page_size]
        start = 100 if number == 1 else 0
        if page[start] != TABLE_LEAF:
            continue
        for cell in _cells(page, start):
            try:
                rowid, record, whole = _cell(data, page, cell, page_size, usable, claimed)
                columns, values = _decode(record, encoding)
            except (IndexError, ValueError, UnicodeDecodeError, struct.error):  # not a cell after all
                continue
            found.append(ScannedRow(rowid, columns, values, whole and len(values) == columns))
    return found


def _cells(page: bytes, start: int) -> Iterator[int]:
    count = int.from_bytes(page[start + 3 : start + 5], "big")
    offsets = (int.from_bytes(page[start + 8 + 2 * i : start + 10 + 2 * i], "big") for i in range(count))
    yield from dict.fromkeys(offset for offset in offsets if start + 8 <= offset < len(page))  # each cell once


def _cell(data: bytes, page: bytes, at: int, page_size: int, usable: int, claimed: set[int]) -> tuple[int, bytes, bool]:
    """A table leaf cell's rowid and payload, its overflow pages followed; and whether the payload is whole. An
    overflow page another cell's chain already took ends the chain (in a sound file no two cells share one)."""
    size, at = _varint(page, at)
    rowid, at = _varint(page, at)
    rowid = rowid - (1 << 64) if rowid >= 1 << 63 else rowid
    most_local = usable - 35
    if size <= most_local:
        return rowid, page[at : at + size], at + size <= len(page)
    least = (usable - 12) * 32 // 255 - 23
    local = least + (size - least) % (usable - 4)
    local = local if local <= most_local else least
    payload = bytearray(page[at : at + local])
    next_page = int.from_bytes(page[at + local : at + local + 4], "big")
    while len(payload) < size:
        if next_page == 0 or next_page in claimed or next_page * page_size > len(data):
            return rowid, bytes(payload), False
        claimed.add(next_page)
        overflow = data[(next_page - 1) * page_size : next_page * page_size]
        next_page = int.from_bytes(overflow[:4], "big")
        payload += overflow[4 : 4 + min(usable - 4, size - len(payload))]
    return rowid, bytes(payload), True
