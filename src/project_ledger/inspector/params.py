"""Reading the inspector's query strings and forms: typed values, or an error a person can act on.

A blank field means "not given", as a browser sends every field of a form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from project_ledger.errors import InvalidArgument

TRUE = frozenset({"1", "on", "true", "yes"})
N = TypeVar("N", int, float)


def text(params: Mapping[str, str], name: str) -> str | None:
    """The field's text, or None when it is absent or blank."""
    value = params.get(name, "")
    return value if value.strip() else None


def flag(params: Mapping[str, str], name: str) -> bool:
    return params.get(name, "").strip().lower() in TRUE


def whole(params: Mapping[str, str], name: str, default: int, label: str | None = None) -> int:
    """A whole number; the service checks its range."""
    value = _parsed(params, name, int, f"{label or name} must be a whole number")
    return default if value is None else value


def fraction(params: Mapping[str, str], name: str) -> float | None:
    """A number such as 0.3, or None when blank; the service checks its range."""
    return _parsed(params, name, float, f"{name} must be a number such as 0.3")


def _parsed(params: Mapping[str, str], name: str, convert: Callable[[str], N], requirement: str) -> N | None:
    value = params.get(name, "").strip()
    if not value:
        return None
    try:
        return convert(value)
    except ValueError:
        raise InvalidArgument(f"{requirement}, not {value!r}") from None
