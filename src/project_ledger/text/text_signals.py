"""Cheap lexical facts about a text that embeddings blur: its numbers, identifiers and negations, and its words.

Two sentences can share nearly every word, and be 0.99 cosine-similar, yet
state different facts ("back off from 250 ms" / "from 500 ms": 0.995 with the
default model; "ROUND_HALF_UP" / "ROUND_HALF_EVEN": 0.984). Near-duplicate and
restatement checks therefore also require the specifics to agree.
"""

from __future__ import annotations

import re

MAX_IDENTIFIER_CANDIDATES = 40
_BACKTICKED = re.compile(r"`([^`\s]{2,200})`")
_IDENTIFIER = re.compile(r"(?<![\w$])[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*(?:\(\))?")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:\s*(?:%|[A-Za-z]+))?")  # with its unit: 60 seconds is not 60 minutes
_WORD = re.compile(r"[a-z0-9]+")
_NEGATIONS = frozenset({"not", "no", "never", "don", "dont", "doesn", "isn", "won", "without", "stop", "instead", "avoid"})
_STOPWORDS = frozenset(
    [
        "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "with", "at", "by", "from", "is", "are", "was",
        "were", "be", "been", "it", "its", "this", "that", "these", "those", "we", "our", "us", "you", "your", "they",
        "their", "as", "into", "than", "then", "so", "but", "if", "when", "which", "what", "who", "will", "would",
        "should", "can", "could", "do", "does", "did", "has", "have", "had",
    ]
)


# Words that carry no topic in a search query, on top of `_STOPWORDS` (short ones are kept there: "go", "ui" and
# "v2" are words of a query, so content_words' length cut does not apply to queries).
_QUERY_FILLER = _STOPWORDS | frozenset(
    [
        "i", "me", "my", "mine", "he", "him", "his", "she", "her", "hers", "them", "there", "here", "how", "why",
        "where", "whom", "whose", "any", "all", "some", "each", "about", "again", "also", "just", "only", "very", "too",
        "not", "no", "yes", "please", "tell", "show", "find", "give", "get", "know", "am", "being", "up", "out", "over",
        "under", "more", "most", "other", "such", "same", "own", "s", "t",
    ]
)
_ANY_WORD = re.compile(r"[^\W_]+")  # letters or digits of any script (CJK included)


def searchable_words(text: str) -> list[str]:
    """The words of a query that could match something: letters or digits, filler words left out."""
    return [word for word in _ANY_WORD.findall(text.lower()) if word not in _QUERY_FILLER]


def wording(text: str) -> str:
    """A text's words in order, lowercased, without punctuation: two texts with the same wording say the same
    thing in the same words ("Run the tests and fix what fails." and "run the tests and fix what fails")."""
    return " ".join(_ANY_WORD.findall(text.lower()))


def specifics(text: str) -> frozenset[str]:
    """Numbers, identifiers (flags, paths and keys too) and negation words: what must agree for two texts to say
    the same thing."""
    lowered = text.lower()
    negations = {word for word in _WORD.findall(lowered) if word in _NEGATIONS}
    numbers = {number.lower() for number in _NUMBER.findall(text)}
    return frozenset({*numbers, *identifier_candidates(text), *exact_terms(text), *negations})


def content_words(text: str) -> frozenset[str]:
    return frozenset(word for word in _WORD.findall(text.lower()) if len(word) > 2 and word not in _STOPWORDS)


def identifier_candidates(text: str) -> list[str]:
    """Words of `text` that look like code identifiers, in order of appearance, without repeats."""
    found: dict[str, None] = {}
    backticked = _BACKTICKED.findall(text)
    quoted = set(backticked)  # a set, not a search of the text per word: linear in the text's length
    for word in [*backticked, *(m.group(0) for m in _IDENTIFIER.finditer(text))]:
        core = word.removesuffix("()")
        if (
            word in quoted or word.endswith("()") or "_" in core.strip("_") or _CAMEL.search(core) or "::" in core or "#" in core
            or ("." in core and all(part for part in core.split(".")))  # Type.method, module.func
        ):  # fmt: skip
            found[core] = None
            if len(found) == MAX_IDENTIFIER_CANDIDATES:
                break
    return list(found)


# A token as written in code, tickets and logs: word characters joined by . - / : # (OPS-94093, v5.31.272,
# billing.retry.v3, src/app/retry.py, --dry-run), with a leading -- or - kept for flags.
_TOKEN = re.compile(r"(?<![\w.\-/:#])(?:--?)?\w+(?:[.\-/:#]+\w+)*")
_SHAPED = re.compile(r"\d|_|[.\-/:#]|[a-z][A-Z]|^-")


def code_tokens(text: str) -> list[str]:
    """The tokens of `text` as written in code, tickets and logs (see `_TOKEN`), in order."""
    return _TOKEN.findall(text)


def exact_terms(query: str) -> list[str]:
    """The tokens of a query that name one thing exactly: a ticket key, version, hex id, error code, hash, path,
    flag, or a snake_case, camelCase or dotted name. A token counts when it holds a digit, an underscore, an
    inner separator or a camel hump; plain words never do. Lowercased, in order, without repeats."""
    found: list[str] = []
    for token in code_tokens(query):
        if len(token) >= 3 and _SHAPED.search(token) and token.lower() not in found:
            found.append(token.lower())
    return found


def mentions(text: str, term: str) -> bool:
    """Whether `text` holds `term` (from `exact_terms`) as a whole token, ignoring case: `OPS-94093` is not in
    `OPS-940931`, nor `v5.31.27` in `v5.31.272`; a full stop after it does not count as part of it."""
    return re.search(rf"(?<![\w.\-/:#]){re.escape(term)}(?![\w]|[.\-/:#]\w)", text, re.IGNORECASE) is not None
