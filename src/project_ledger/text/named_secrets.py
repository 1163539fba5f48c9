"""Secrets named in prose, in any phrasing: a random-looking value next to a word that names a secret.

`the api key is Zq8Rk2...`, `and secret wJalrX...`, `aws secret access key: ...`,
`I rotated the token to ...`, `use <value> as the deploy key`, `<value> (our
signing secret)`. The words are key, secret, token, password (passwd, pwd,
passphrase), credential, creds, signing and bearer, alone or in a name
(`apiKey`, `client_secret`). The text around each is split at whitespace into
chunks, and a value is taken from a chunk

- right after the word (`secret <value>`, `key: <value>`, `password=<value>`),
- or up to a dozen chunks on, after a link: `is`, `was`, `to`, `:`, `=`, `->`
  (`the token for the prod cluster is <value>`),
- or before the word, followed by `is`, `as`, a dash or an opening bracket the
  name closes, and at most four chunks (`<value> is the staging api key`).

It stays on its line (a name ending its line with a colon reaches the next
line's first chunk) and stops at a sentence's end. A plain `key` (`the key`,
not `the api key`) and a plural need a link: `key = "name"` and `keys <id>` are
code. A value must look random (`secret_values.looks_random`, with a lower bar
after password words, or `random_alphanumeric`) and be none of what code and docs put there: a call, a
keyword argument, a template, a variable, a file name, a URL, a name ending in
one of the words (`X25519PrivateKey`), base64 of plain text. A word is passed
over when what surrounds it says the value is something else: a public or cache
key, a key id, a hash or digest, a commit, a fingerprint, a nonce, a type.

The scan reads each character a bounded number of times: the reach of words
close together is merged into one region, split into chunks once.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate, pairwise

from project_ledger.text import bounded_scan
from project_ledger.text.bounded_scan import Budget
from project_ledger.text.secret_values import fragment_positions, looks_random, lower, not_placeholder, random_alphanumeric

# A word naming a secret, alone or as a part of a name: `key`, `api_key`, `apiKey`, `DB_PASSWORD`; not `monkey`,
# `keyboard`, `tokenizer` or `secretary`.
WORD = bounded_scan.compile(
    r"(?:(?<![A-Za-z])|(?<=[a-z0-9])(?=[A-Z]))"
    r"(?i:(?P<pw>passw(?:or)?d|passphrase|pwd)|secret|token|(?P<key>key)|credential|cred|signing|bearer)(?P<plural>s?+)"
    r"(?![a-z])"
)
# Where WORD can start, lower-cased: it is tried only there.
FRAGMENTS = ("key", "secret", "token", "pass", "pwd", "cred", "signing", "bearer")
_WORDS = ("password", "passwd", "passphrase", "pwd", "secret", "token", "key", "credential", "cred", "signing", "bearer")
_CHUNK = re.compile(r"\S++")  # cannot backtrack; the standard engine splits a region in one call, not one call a chunk
_LINE_BREAK = re.compile(r"\n")
_NON_SPACE = re.compile(r"\S*+")  # matched where a region would end, to take the rest of its chunk
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# Only used whole, or searched in one value; the lookbehinds let a search enter a run at its start only.
_KEYWORD_ARGUMENT = re.compile(r"(?<![a-z0-9_.])[a-z_][a-z0-9_.]*+=(?:[a-z_][a-z0-9_.]*+|True|False|None)")  # stream=self.stream
_ENV_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++=")  # LEDGER_SHARED_SERVER=true: a setting
_FILE_NAME = re.compile(r"(?<![a-z0-9_\-/.])(?:[a-z0-9_\-/]++\.)++[a-z]{2,4}")  # sfc64-testset-1.csv
_VARIABLE = re.compile(r"\$[A-Za-z_]\w*+")  # $API_KEY: where the value comes from
_TEMPLATE = re.compile(r"#[a-z_]{3,}+#|@[A-Z_]{3,}+@|%[A-Z_]{3,}+%")  # a template's slot: f2py's #name#, autoconf's @VAR@, %VAR%
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")

REACH = 96  # characters either side of a word that are looked at
MAX_AFTER = 12  # chunks after a word
MAX_BETWEEN_BEFORE = 4  # chunks between a value before the word and the word, after the link
MAX_VALUE = 1024  # a longer chunk is data, not a secret
MAX_NAME = 64  # characters of a name either side of the word that are read
MIN_VALUE = 8  # no shorter value looks random (`secret_values.looks_random`)

# Links between a name and its value after it: `the key is <v>`, `set it to <v>`, `key -> <v>`.
_LINKS_AFTER = frozenset(["is", "was", "are", "be", "to", "now", ":", "->", "=>", "equals", "reads"])
_CODE_LINKS = frozenset(["=", "==", ":=", "=>"])  # also links, but not for a plain `key` (`key = "name"` in code)
# Links between a value and its name after it: `<v> is the key`, `use <v> as the token`, `<v> - the signing secret`.
_LINKS_BEFORE = frozenset(["is", "was", "as", "=", "-", "--", "—", "–"])
# Words saying the value next to a secret's name is something else: its hash, its id, where it is kept, when it ends.
NOT_SECRET = frozenset(
    [
        "public", "publishable", "pub", "cache", "sort", "primary", "foreign", "partition", "routing", "idempotency",
        "lookup", "dedup", "dedupe", "shard", "row", "hash", "hashed", "hashes", "sha", "sha1", "sha256", "sha512",
        "md5", "digest", "checksum", "fingerprint", "commit", "id", "ids", "uuid", "guid", "kid", "nonce", "socket",
        "type", "url", "uri", "endpoint", "path", "file", "dir", "name", "field", "length", "count", "prefix", "suffix",
        "header", "env", "var", "format", "pattern", "label", "hint", "ttl", "expiry", "expires", "expiration",
        "timeout", "arn", "version", "kind", "index", "policy", "size", "bits",
    ]
)
# Words before a name that make it something other than a secret's: a public key, a cache or sort key.
_QUALIFIERS = frozenset(
    [
        "public", "publishable", "cache", "sort", "primary", "foreign", "partition", "routing", "idempotency", "lookup",
        "dedup", "dedupe", "shard", "row", "object", "bucket", "index", "map", "dict", "group", "hash", "hashed", "sha",
        "sha1", "sha256", "md5", "commit",
    ]
)
# Words before a plain `key` that leave it plain: `the key is ...` may name a secret, `the api key is ...` does.
_DETERMINERS = frozenset([
    "the", "a", "an", "my", "our", "your", "this", "that", "its", "their", "his", "her", "new", "old", "same", "one",
    "each", "every", "any", "and", "or",
])
_SENTENCE_END = (".", "!", "?", ";")
_OPENERS = "\"'`([{<*"
_CLOSERS = "\"'`)]}>,;:."
_CODE = frozenset("\"'`()[]{}<>,;\\")  # inside a value, these make it code or escaped text


def _bare(text: str) -> str:
    """The chunk without the quotes, brackets and sentence punctuation around it; a trailing `*` only as many as
    lead it (`**bold**`), since a password may end in one."""
    head = text.lstrip(_OPENERS)
    stars = text[: len(text) - len(head)].count("*")
    inner = head.rstrip(_CLOSERS)
    while stars and inner.endswith("*"):
        inner, stars = inner[:-1].rstrip(_CLOSERS), stars - 1
    return inner


@dataclass(frozen=True)
class _Chunk:
    start: int
    end: int
    text: str
    line: int  # how many line breaks precede it
    named: bool  # it holds a word naming a secret
    ends_named: bool  # it ends with one: a name (`X25519PrivateKey`, `api_key`), not a value
    bare: str  # without the quotes, brackets and punctuation around it (`_bare`)
    word: str  # `bare`, lower-cased

    def links(self, links: frozenset[str]) -> bool:
        return self.text in links or self.word in links

    def value(self, password: bool) -> tuple[int, int] | None:
        """The span of the chunk's value, when it looks like a secret: not a template (`{password!r}`), an
        elision (`eyJhbGci...`), code (`stream=stream)`), a file name, a URL or base64 of plain text."""
        if len(self.text) > MAX_VALUE:
            return None
        value = self.bare
        if (
            not not_placeholder(self.text)
            or self.text.lstrip("\"'`(*").startswith(("{", "${", "$("))
            or _VARIABLE.fullmatch(value)
            or self.ends_named
            or "://" in value
            or any(c in _CODE for c in value)
            or _KEYWORD_ARGUMENT.fullmatch(value)
            or _ENV_ASSIGNMENT.match(value)
            or _FILE_NAME.fullmatch(value)
            or _TEMPLATE.search(value)
            or not (looks_random(value, password=password) or random_alphanumeric(value))
            or _encoded_text(value)
        ):
            return None
        start = self.start + len(self.text) - len(self.text.lstrip(_OPENERS))
        return start, start + len(value)


def _chunk(start: int, text: str, line: int, named: bool, ends_named: bool) -> _Chunk:
    bare = _bare(text) if len(text) <= MAX_VALUE else text
    return _Chunk(start, start + len(text), text, line, named, ends_named, bare, bare.lower())


@dataclass(frozen=True)
class _Word:
    start: int
    end: int
    password: bool  # a password's name: a lower bar for its value
    loose: bool  # `keys`, `tokens`, or a plain `key`: the value must be linked to it (`is`, `:`), not just follow it


def _encoded_text(value: str) -> bool:
    """Base64 of words (`dGhlIHNhbXBsZSBub25jZQ==`, "the sample nonce"): test data, where a key is random bytes."""
    if not _BASE64.fullmatch(value):
        return False
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return b" " in decoded and all(32 <= byte < 127 for byte in decoded)


def _name_words(name: str) -> set[str]:
    return {part.lower() for part in _NAME_PART.findall(name)}


def _regions(text: str, words: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The stretches of text within REACH of a word, overlapping ones merged, widened to whole chunks."""
    start = end = -1
    for word_start, word_end in words:
        low, high = max(0, word_start - REACH), min(len(text), word_end + REACH)
        if low > end:
            if end >= 0:
                yield start, end
            reach = max(0, low - MAX_VALUE)
            start = max(reach, *(text.rfind(space, reach, low) + 1 for space in " \n\t\r")) if low else 0
        if high > end:
            end = _NON_SPACE.match(text, high, high + MAX_VALUE).end()  # type: ignore[union-attr]
    if end >= 0:
        yield start, end


class _Region:
    """The chunks of one stretch of text, each made when first looked at: most words have nothing in reach."""

    def __init__(self, text: str, start: int, end: int, word_starts: list[int], word_ends: set[int]) -> None:
        self.text, self.start, self.word_starts, self.word_ends = text, start, word_starts, word_ends
        region = text[start:end]
        self.spans = [(start + m.start(), start + m.end()) for m in _CHUNK.finditer(region)]
        self.starts = [span[0] for span in self.spans]
        self.breaks = [start + m.start() for m in _LINE_BREAK.finditer(region)]
        self.long_before = list(accumulate((end - start >= MIN_VALUE for start, end in self.spans), initial=0))
        self._made: dict[int, _Chunk] = {}

    def __len__(self) -> int:
        return len(self.spans)

    def __getitem__(self, index: int) -> _Chunk:
        if (chunk := self._made.get(index)) is None:
            start, end = self.spans[index]
            words = bisect.bisect_left(self.word_starts, start) < bisect.bisect_left(self.word_starts, end)
            text = self.text[start:end]
            ends_named = words and start + len(text.rstrip(_CLOSERS)) in self.word_ends
            chunk = self._made[index] = _chunk(start, text, bisect.bisect_left(self.breaks, start), words, ends_named)
        return chunk


def _word(m: bounded_scan.Match, chunks: _Region, index: int) -> _Word | None:
    """The word as a secret's name, or None when the name holding it or the words before it say the value is
    something else: `public key`, `cache_key`, `key_id`, `token type`, `password hash:`, `the kid of the key:`."""
    chunk = chunks[index]
    if len(chunk.text) > MAX_VALUE + 2 * MAX_NAME or (m.start() > chunk.start and chunk.text[m.start() - chunk.start - 1] in "$%"):
        return None  # data (`key-key-key-...`), or a variable (`$PWD`, `%PASSWORD%`), not a name and its value
    before = chunk.text[max(0, m.start() - chunk.start - MAX_NAME) : m.start() - chunk.start].lstrip(_OPENERS)
    after = chunk.text[m.end() - chunk.start :][:MAX_NAME].split("=")[0].split(":")[0]
    if (_name_words(before) | _name_words(after)) & NOT_SECRET:
        return None
    previous = [c for c in map(chunks.__getitem__, range(max(0, index - 4), index)) if c.line == chunk.line]
    if any(c.word in _QUALIFIERS for c in previous[-2:]):
        return None
    if any(c.word in NOT_SECRET and following.word in ("of", "for") for c, following in pairwise(previous)):
        return None  # `the fingerprint of the signing key: <v>`
    plain_key = m["key"] is not None and not before and (not previous or previous[-1].word in _DETERMINERS or not previous[-1].word.isalpha())
    return _Word(m.start(), m.end(), m["pw"] is not None, plain_key or bool(m["plural"]))


def _after(chunks: _Region, index: int, word: _Word) -> tuple[int, int] | None:
    """A value after the word: in the rest of its chunk (`key:<v>`), right after it, or after a link."""
    chunk = chunks[index]
    rest = chunk.text[word.end - chunk.start :].lstrip("\"'`*)]")
    if rest[:1] in (":", "=") or rest[:2] == "->":
        tail = rest.lstrip(":=>-")
        if tail:  # the value is right there: it is the secret or there is none
            code = rest[:1] == "=" and not rest.startswith("=>")
            return None if code and word.loose else _chunk(chunk.end - len(tail), tail, chunk.line, False, False).value(word.password)
    elif rest:
        return None  # the word runs on into a longer name (`token_endpoint`), a call (`key(...)`) or a list (`pwd,`)
    previous = chunk
    for n in range(min(MAX_AFTER, len(chunks) - index - 1)):
        candidate = chunks[index + 1 + n]
        if previous.text.endswith(_SENTENCE_END):
            return None
        if candidate.line != previous.line and not (candidate.line == previous.line + 1 and previous.text.endswith(":")):
            return None
        if candidate.word in NOT_SECRET:
            return None
        linked = previous.links(_LINKS_AFTER) or previous.text.endswith(":")
        if not word.loose:
            linked = linked or n == 0 or previous.links(_CODE_LINKS) or previous.text.endswith("=")
        if linked and (span := candidate.value(word.password)) is not None:
            return span
        if candidate.named:
            return None  # a name of its own, looked at on its own
        previous = candidate
    return None


def _before(chunks: _Region, index: int, word: _Word) -> tuple[int, int] | None:
    """A value before the word, linked to it: `<v> is the api key`, `<v> (our token)`, `<v> - signing secret`."""
    chunk = chunks[index]
    closes = chunk.text[word.end - chunk.start :].startswith(")")
    for value_index in range(index - 1, max(-1, index - 2 - MAX_BETWEEN_BEFORE), -1):
        candidate, link = chunks[value_index], chunks[value_index + 1]
        if candidate.line != chunk.line:
            return None
        if link is not chunk and (link.text.endswith(_SENTENCE_END) or link.word in NOT_SECRET):
            return None  # the chunks between the value and the word end a sentence or say it is something else
        linked = link.links(_LINKS_BEFORE) or (link.text.startswith("(") and closes)  # `<v> (our api key)`
        if linked and (span := candidate.value(word.password)):
            return span
    return None


def lines_with_words(text: str) -> Iterator[tuple[int, int]]:
    """Each line holding a word WORD matches, found without a regular expression: what `redaction` hides when
    the scan for named secrets ran out of time."""
    lowered = lower(text)
    breaks = [m.start() for m in _LINE_BREAK.finditer(text)]
    last = -1
    for position in fragment_positions(text, FRAGMENTS):
        word = next((w for w in _WORDS if lowered.startswith(w, position)), None)
        if word is None:
            continue
        end = position + len(word) + lowered.startswith("s", position + len(word))
        left = text[position - 1] if position else " "
        starts = not ("a" <= left.lower() <= "z") or ((left.islower() or left.isdigit()) and text[position].isupper())
        line = bisect.bisect_left(breaks, position)
        if starts and not (end < len(text) and "a" <= text[end] <= "z") and line != last:
            last = line
            yield breaks[line - 1] + 1 if line else 0, breaks[line] if line < len(breaks) else len(text)


def find(text: str, budget: Budget) -> Iterator[tuple[int, int]]:
    """The span of each secret value named in `text`, in no particular order."""
    matches = [m for p in fragment_positions(text, FRAGMENTS) if (m := bounded_scan.match(WORD, text, budget, p)) is not None]
    word_starts, word_ends = [m.start() for m in matches], {m.end() for m in matches}
    for region_start, region_end in _regions(text, [m.span() for m in matches]):
        region = _Region(text, region_start, region_end, word_starts, word_ends)
        for m in matches[bisect.bisect_left(word_starts, region_start) : bisect.bisect_left(word_starts, region_end)]:
            budget.remaining()  # the words of a text made of them (`key key key ...`) share the scans' time
            index = bisect.bisect_right(region.starts, m.start()) - 1
            low, high = max(0, index - 1 - MAX_BETWEEN_BEFORE), min(len(region), index + 1 + MAX_AFTER)
            if region.long_before[high] == region.long_before[low]:
                continue  # no chunk in reach is long enough to be a value
            word = _word(m, region, index)
            if word is not None and (span := _after(region, index, word) or _before(region, index, word)) is not None:
                yield span
