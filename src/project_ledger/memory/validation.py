"""Checks on what callers pass to the memory services, each failing with an `InvalidArgument` that says what to send.

The limits are settings (see `config.Settings`); the MCP schema enforces some of them too, but the CLI and the
inspector reach the services without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from project_ledger.errors import InvalidArgument
from project_ledger.models import KINDS
from project_ledger.text.text_signals import searchable_words

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_RELATIVE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one call may ask for or get back; each is a setting (see `config.Settings`)."""

    max_text_bytes: int
    instructions_tokens: int
    max_k: int = 100
    max_tags: int = 32
    max_label_chars: int = 200  # tags, session, role, file and symbol names
    max_result_tokens: int = 25_000


class Validator:
    """Texts, kinds, labels and the relevance floor, checked against `limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    def text(self, text: str, what: str = "text") -> str:
        if not text or not text.strip():
            raise InvalidArgument(f"{what} is empty: pass the words to store or search for")
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidArgument(f"{what} holds an unpaired UTF-16 surrogate; send valid Unicode") from None
        if size > self.limits.max_text_bytes:
            raise InvalidArgument(
                f"{what} is {size} bytes; the limit is {self.limits.max_text_bytes} (LEDGER_MAX_TEXT_BYTES). "
                "Store the essential part, or split it into several memories."
            )
        return text

    def query(self, query: str) -> str:
        """A search query: a text (see `text`) with at least one word that could match something."""
        query = self.text(query, "query")
        if not searchable_words(query):
            raise InvalidArgument(
                f"query {query[:80]!r} has nothing to search for: it is only punctuation or common words like "
                "'the' and 'what'. Ask with the words that matter: a name, identifier, topic or phrase from the "
                "memory you want (e.g. 'webhook retry backoff', 'OPS-4127')."
            )
        return query

    @staticmethod
    def kind(kind: str) -> str:
        if kind not in KINDS:
            raise InvalidArgument(f"kind={kind!r} is not one of {', '.join(KINDS)}")
        return kind

    def labels(self, values: list[str], what: str, limit: int | None = None) -> list[str]:
        """Tags, names or ids: each non-empty, valid Unicode, one line without control characters, and not too long;
        repeats dropped, order kept."""
        if limit is not None and len(values) > limit:
            raise InvalidArgument(f"{len(values)} {what} given; at most {limit} are kept per memory")
        cleaned = []
        for value in values:
            if not value.strip():
                raise InvalidArgument(f"{what} may not contain empty strings")
            if len(value) > self.limits.max_label_chars:
                raise InvalidArgument(
                    f"each of {what} must be at most {self.limits.max_label_chars} characters (LEDGER_MAX_LABEL_CHARS)"
                )
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidArgument(f"{what} holds an unpaired UTF-16 surrogate; send valid Unicode") from None
            if _CONTROL.search(value):
                raise InvalidArgument(
                    f"{what} may not hold control characters such as newlines or tabs ({value[:60]!r}); "
                    "send a short plain name, and put anything longer in the text"
                )
            if value not in cleaned:
                cleaned.append(value)
        return cleaned

    def label(self, value: str | None, what: str) -> str | None:
        return None if value is None else self.labels([value], what)[0]

    @staticmethod
    def floor(value: float | None) -> float | None:
        if value is not None and not 0 <= value <= 1:
            raise InvalidArgument(f"min_relevance={value} is out of range: give 0 (no floor) to 1")
        return value


def parse_moment(value: str, what: str, end_of_day: bool = False) -> float:
    """An ISO date or datetime, or an age such as `30m`, `12h`, `2d`, `1w` (that long ago); epoch seconds.

    With `end_of_day`, a bare date means the end of that day (for `until`).
    """
    relative = _RELATIVE.match(value)
    if relative:
        try:
            return (datetime.now(UTC) - timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})).timestamp()
        except OverflowError:
            raise InvalidArgument(f"{what}={value!r} reaches back past year 1; use a smaller age or an ISO date") from None
    try:
        # The replace is not redundant: fromisoformat alone refuses a date with a Z (2026-11-30Z).
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))  # noqa: FURB162
    except ValueError:
        raise InvalidArgument(
            f"{what}={value!r} is not a date: use ISO 8601 (2026-11-30 or 2026-11-30T09:00:00Z) or an age like 2d, 12h, 1w"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if end_of_day and len(value.strip()) == 10:
        moment += timedelta(days=1, microseconds=-1)
    return moment.timestamp()
