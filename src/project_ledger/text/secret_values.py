"""Whether a value found next to a secret's name is plausibly the secret itself, by its shape alone.

A real key or token is random: long enough, letters mixed with digits or
symbols, high Shannon entropy, and not made of words the way identifiers are
(`authTokenV2Handler`, `my_app_v2`). Placeholders (`<your-key>`, `xxxxx`,
`${API_KEY}`), the passwords of examples (`password1`, `admin`) and UUIDs
(ids, not credentials) are not secrets. Shared by `redaction` (values assigned
to a name) and `named_secrets` (values next to a secret's name in prose), with
the search for the words that name a secret.
"""

from __future__ import annotations

import math
import re
from collections import Counter

MARKER_START = "[REDACTED:"

# A value that only stands in for a secret: a template, a mask, an elision, an invitation to fill it in.
_PLACEHOLDER = re.compile(r"x{5,}|\*{3,}|\.{3}|…|\$\{|\{\{|%\(|<|>|your[_-]|placeholder|change[_-]?me|redacted", re.IGNORECASE)

# The passwords of examples and local defaults: password1, secret123, admin, test!, guest.
EXAMPLE_PASSWORD = re.compile(
    r"(?:my|your)?[-_]?(?:p(?:ass)?w(?:or)?d|pass|pw|secret|token|test(?:ing)?|admin|example|sample|demo|dummy|fake|default|qwerty|letmein|welcome"
    r"|hello|foo|bar|baz|user|guest|root)[-_]?[0-9]{0,6}[!.?]*",
    re.IGNORECASE,
)

# Pieces an identifier is built from: `authTokenV2Handler` -> auth, Token, V, 2, Handler. Random strings
# break into many short pieces (`wJalrXUtn` -> w, Jalr, X, Utn), identifiers into fewer, longer ones,
# most of them pronounceable words.
_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_VOWEL = re.compile(r"[aeiouAEIOU]")
# Only used whole (`fullmatch`); the lookbehind lets a search enter a run of letters at its start only.
_IDENTIFIER_LIKE = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?:"
    r"[a-z]+[0-9]*(?:[_.\-](?:[a-z]+[0-9]*|[0-9]+))+"  # snake, kebab, dotted: my_app_v2, api-key-1
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # SCREAMING_SNAKE
    r"|[a-z]+(?:[A-Z][a-z]+[0-9]*)+"  # camelCase
    r"|(?:[A-Z][a-z]+[0-9]*)+"  # PascalCase
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a UUID: an id, not a credential
    r")"
)

# The commonest shape of a chosen password, a capitalised word and a number: a name by its looks, a password after
# a password's name.
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_WORD_AND_NUMBER = re.compile(r"[A-Z][a-z]+[0-9]+")


def lower(text: str) -> str:
    """`text` lower-cased, each character at its offset."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two ("İ"); keep the offsets aligned
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return lowered


def fragment_positions(text: str, fragments: tuple[str, ...]) -> list[int]:
    """Where the text holds one of `fragments` (lower-case), case-insensitively, in order: `str.find` locates
    them far faster than a case-insensitive regular expression."""
    lowered = lower(text)
    positions = []
    for fragment in fragments:
        position = lowered.find(fragment)
        while position != -1:
            positions.append(position)
            position = lowered.find(fragment, position + 1)
    return sorted(positions)


def not_placeholder(secret: str) -> bool:
    return _PLACEHOLDER.search(secret) is None and MARKER_START not in secret


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def looks_random(value: str, *, password: bool) -> bool:
    """Whether a value assigned to a secret-sounding name is plausibly the secret itself.

    `password` lowers the bar for names like `DB_PASSWORD`, since a real
    password such as Summer2024! would not pass for an API key.
    """
    n = len(value)
    if n < (8 if password else 16) or not not_placeholder(value) or EXAMPLE_PASSWORD.fullmatch(value):
        return False
    if _IDENTIFIER_LIKE.fullmatch(value) and not (password and _WORD_AND_NUMBER.fullmatch(value)):
        return False
    has_alpha = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() and c not in "_-." for c in value)
    if password:
        return has_alpha and (has_digit or has_symbol) and entropy(value) >= 2.5
    has_upper_and_lower = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if not (has_alpha and (has_digit or has_upper_and_lower)) or entropy(value) < 2.75:
        return False
    if _HEX.fullmatch(value):
        return True  # hex has no letters to make words of; its runs of digits would fail the test below
    pieces = _PIECE.findall(value)
    in_words = sum(len(p) for p in pieces if len(p) >= 3 and p.isalpha() and _VOWEL.search(p))
    # Share of random values that pass, measured: base62 98.5% at 16 characters and 99.9% at 32; hex 97% and 99.7%;
    # [a-z0-9] only 87% and 94%, as its letters run into word-like pieces more often.
    return len(pieces) >= 0.25 * n and in_words < 0.75 * n


def random_alphanumeric(value: str) -> bool:
    """A long run of letters and digits with digits spread through it, for a value that a secret's name points
    at: what `looks_random` misses in lower-case keys, whose letters run into word-like pieces (one in twenty at
    32 characters; this takes 999 in 1,000)."""
    digits = sum(c.isdigit() for c in value)
    return (
        len(value) >= 20 and value.isascii() and value.isalnum() and 3 <= digits < len(value) and entropy(value) >= 3.5
        and not _IDENTIFIER_LIKE.fullmatch(value)
    )  # fmt: skip
