"""Small helpers for the sentences people and models read."""

from __future__ import annotations


def plural(count: int, one: str, many: str | None = None) -> str:
    """`count` and the noun that goes with it: 1 memory, 2 memories, 0 versions."""
    return f"{count} {one if count == 1 else many or one + 's'}"
