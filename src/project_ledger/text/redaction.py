"""Secret redaction: every secret in a text is replaced by `[REDACTED:<type>]` before it is stored.

Three kinds of detector run over the whole text:

- Formats with a fixed shape: private key blocks, AWS access key ids, GitHub,
  Slack, OpenAI, Anthropic, Stripe (keys and `whsec_` webhook secrets), Twilio,
  Azure and Google client secrets, Google API keys, Slack webhooks, JWTs.
  A prefix and a length make these near-certain, so a match is redacted unless
  it is visibly a placeholder (`ghp_xxxx...`).
- Values that are only secret by context: a password in a URL
  (`postgres://admin:<this>@db`), an `Authorization:` header, and a value
  assigned to a name such as `api_key`, `client_secret`, `DB_PASSWORD` or
  `STRIPE_KEY` in code, env files, YAML, JSON or prose ("the secret is ...",
  "my password was: ..."). These must not fire on
  ordinary code (`password = get_password()`, `token = token.strip()`,
  `api_key: ${OPENAI_API_KEY}`, `sort_key = "name"`), so the value has to look
  random (`secret_values.looks_random`). Password-like names
  get a lower bar than key/token names, since a password is often a short
  word-and-digit mix while an API key is long and random. The passwords of
  examples and local defaults (`password1`, `admin`, `postgres:postgres@`) and
  passphrases with spaces are left alone.
- Secrets named in prose in any other phrasing (`named_secrets`): `and secret
  <value>`, `aws secret access key: <value>`, `<value> is the staging api key`.

Only the secret itself is replaced; the name, the URL around a password and the
line breaks stay. A private key is replaced as one block from BEGIN to END, or
to the end of its key material when the END line is missing (a truncated
paste). Text without a secret comes back unchanged, the same string object,
and redacting twice changes nothing more: a value holding `[REDACTED:` is
never a secret.

Why not detect-secrets (1.5.0, evaluated for this module): importing any of its
plugins takes 140-230 ms because the package imports `requests`; its scanner
costs about 8.5 ms per KB of ordinary code (this module: well under 0.1 ms);
it reports secrets per line, so a private key is flagged by its BEGIN line
only; its OpenAI plugin knows only the legacy `T3BlbkFJ` keys and there is no
Anthropic plugin; and its keyword plugin flags any word after `password =`.
Re-checked for issue 32: 1.5.0 (May 2024) is still its latest release, and its
keyword plugin reads assignments and quoted strings, not a secret named in a
sentence, which is what was missing here. What it would contribute beyond that
is a dozen short regexes, written here against the providers' documented
formats. `benchmarks/redaction.py` measures the detectors on fake secrets, on
a generated set of secrets in many phrasings, and their false positives on
real code and prose.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from project_ledger.text import bounded_scan, named_secrets
from project_ledger.text.bounded_scan import Budget, ScanTimedOut
from project_ledger.text.secret_values import EXAMPLE_PASSWORD, fragment_positions, looks_random, not_placeholder

log = logging.getLogger(__name__)

_MARKER = "[REDACTED:{}]"


@dataclass(frozen=True)
class Redacted:
    text: str
    found: dict[str, int]  # type -> how many were replaced, in order of first appearance
    cut_short: tuple[str, ...] = ()  # types whose scan ran out of time and were redacted around their hints instead

    @property
    def count(self) -> int:
        return sum(self.found.values())


@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: bounded_scan.Pattern
    hints: tuple[str, ...]  # the pattern runs only when one of these is in the text (cheap pre-check)
    group: str | int = 0  # the part of the match that is the secret
    accept: Callable[[bounded_scan.Match], bool] | None = None


def _group_not_placeholder(group: str | int) -> Callable[[bounded_scan.Match], bool]:
    return lambda m: not_placeholder(m[group])


_PEM_LABEL = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
_LINE_BREAK = r"[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]*"  # a real line break, or an escaped one inside a JSON or YAML string
# One or more line breaks, taken whole: blank lines leave no choice of where one break's spaces end and the next's begin.
_LINE_BREAKS = r"(?:[ \t]*+(?:\r?\n|(?:\\r)?\\n))++[ \t]*+"
_LINE_END = r"(?=[ \t]*+(?:[\r\n\\\"'`]|-----|$))"
# A line of base64 shorter than a full one ends the block, so a truncated key followed by prose ("Thanks") stops there.
# Runs of key characters are possessive: what follows each one can never be a key character.
_PRIVATE_KEY = bounded_scan.compile(
    rf"-----BEGIN {_PEM_LABEL}-----"
    r"(?:"
    rf"{_LINE_BREAKS}"
    r"(?:(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset): [^\r\n\\]*+"  # PEM and PGP armour headers
    rf"|[A-Za-z0-9+/]{{40,}}+={{0,2}}+{_LINE_END}"  # a full line of base64 (64 wide in PEM, 70 or 76 elsewhere)
    rf"|[A-Za-z0-9+/]*+={{1,2}}+{_LINE_END}|=[A-Za-z0-9+/]{{4}}{_LINE_END}"  # the padded last line; the PGP checksum
    rf"|[A-Za-z0-9+/]++(?=(?:{_LINE_BREAK})?-----END))"  # a short last line
    r"|[ \t]++(?:[A-Za-z0-9+/]{16,}+={0,2}+|[A-Za-z0-9+/]++={0,2}+(?=[ \t]*+-----END))"  # line breaks lost in a paste
    r")*+"
    rf"(?:(?:{_LINE_BREAK}|[ \t]*+)-----END {_PEM_LABEL}-----)?"
)
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{32}")

_URL_PASSWORD = bounded_scan.compile(r"://(?<=[A-Za-z0-9]://)(?P<user>[^\s:/?#@\[\]\"'`<>]{0,256}+):(?P<pw>[^\s:/?#@\"'`<>]{1,256}+)@")


def _real_url_password(m: bounded_scan.Match) -> bool:
    pw = m["pw"]
    if pw == m["user"] or pw.startswith(("$", "{", "%s", "%(")) or EXAMPLE_PASSWORD.fullmatch(pw):
        return False  # postgres:postgres@, a template, or user:password@ in an example
    return not_placeholder(pw) and set(pw) != {"x"}


_AUTH_HEADER = bounded_scan.compile(
    r"\bAuthorization[\"']?[ \t]{0,16}[:=,][ \t]{0,16}[\"']?(?:Bearer|Basic|Token|bearer|basic|token)[ \t]+"
    r"(?P<value>[A-Za-z0-9._~+/\-]{16,1024}=*)(?![A-Za-z0-9._~+/\-=])"
)

# Names whose value may be a secret: `db_password`, `clientSecret`, `X-Api-Key`, `GITHUB_TOKEN`, `STRIPE_KEY`.
_SECRET_NAME = bounded_scan.compile(
    r"(?i)(?P<pw>passw(?:or)?d|passphrase|pwd|secret)"
    r"|token|credential|api[_\-]?key|apikey|(?:access|private|auth|signing|encryption|master|account|service|client|db|database)[_\-]?key"
    r"|(?P<generic>(?-i:(?<=[A-Z0-9])_KEY(?![A-Za-z])))"
)
# Every name that can match _SECRET_NAME holds one of these, lower-cased; `str.find` locates them far faster than a regex.
_NAME_FRAGMENTS = ("pass", "pwd", "secret", "token", "credential", "key")
MAX_NAME = 128  # a longer run of name characters is data, not a name
_NAME_TAIL = bounded_scan.compile(rf"[\w.\-]{{0,{MAX_NAME}}}")
MAX_GAP = 32  # spaces between a name, its separator and its value
_VALUE = bounded_scan.compile(
    rf"[\"'`\]]{{0,2}}[ \t]{{0,{MAX_GAP}}}+"  # the end of a quoted key or a subscript: "password": or ['password'] =
    rf"(?::[ \t]{{0,{MAX_GAP}}}+[A-Za-z_][\w.\[\], |]{{0,{MAX_NAME}}}?[ \t]{{0,{MAX_GAP}}}+(?==))?"  # a type annotation: api_key: str = ...
    rf"(?::=|=>|={{1,3}}|:|(?<=[ \t])(?:is|was)(?:[ \t]{{0,{MAX_GAP}}}+:)?(?=[ \t]))[ \t]{{0,{MAX_GAP}}}+"  # ... or in prose: "the password is <value>"
    r"(?:[bBrRuU@]{0,2}(?P<q>[\"'`])(?P<quoted>[^\"'`\s\\]{1,4096})(?P=q)"  # a quoted value ...
    r"|(?P<bare>(?:[^\s\"'`,;&()\[\]{}<>]|&(?!\w+=)){1,4096}+)(?P<after>[(\[]?))"  # ... or a bare one (env files, prose, a URL query)
)
# A plain `..._KEY` names something else when it is one of these: CACHE_KEY, SORT_KEY, IDEMPOTENCY_KEY.
_NOT_SECRET_KEY_WORDS = frozenset(
    [
        "cache", "sort", "primary", "foreign", "partition", "routing", "idempotency", "lookup", "dedup", "dedupe",
        "shard", "row", "object", "bucket", "index", "map", "dict", "hash", "group", "config", "setting", "settings",
        "state", "context", "env", "field", "column", "attr", "attribute", "metadata", "meta",
    ]
)
# A name ending in one of these holds something about the secret, not the secret: token_type, password_hash, secret_arn.
_NOT_SECRET_NAME_ENDS = frozenset(
    [
        "type", "url", "uri", "endpoint", "path", "file", "dir", "name", "field", "len", "length", "count", "hash",
        "hashed", "digest", "prefix", "suffix", "header", "env", "var", "format", "pattern", "regex", "label",
        "placeholder", "hint", "ttl", "expiry", "expires", "timeout", "arn", "version", "kind", "class", "id", "ids",
        "index", "param", "policy", "prompt", "text", "message", "msg", "error", "title", "description", "help",
        "tokens",
    ]
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SEPARATOR = re.compile(r"[_.\-]+")
_DOTTED_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)+")  # used whole (`fullmatch`)


class _Overread(Exception):
    """Names run together (`key=key=key=...`) made each value read most of the text again."""


# Values may overlap (`config=password=...` holds a value inside a value), but on average no character of a
# text is read as part of more than this many values: the scan stays linear in the text's length.
MAX_READS_PER_CHARACTER = 8


def _secret_assignments(text: str, budget: Budget) -> Iterator[tuple[int, int]]:
    done = 0  # the end of the last name looked at, or of the last secret found
    allowance = MAX_READS_PER_CHARACTER * len(text)
    for position in fragment_positions(text, _NAME_FRAGMENTS):
        if position < done:
            continue
        end = done = bounded_scan.match(_NAME_TAIL, text, budget, position).end()  # type: ignore[union-attr]  # {0,n} always matches
        if (m := bounded_scan.match(_VALUE, text, budget, end)) is None:
            continue
        allowance -= m.end() - end
        if allowance < 0:
            raise _Overread
        start = position
        while start > 0 and end - start < MAX_NAME and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
            start -= 1
        name = text[start:end]
        keywords = list(bounded_scan.finditer(_SECRET_NAME, name, budget))
        if not keywords:
            continue
        group = "quoted" if m["quoted"] is not None else "bare"
        value = m[group]
        if group == "bare":
            value = value.rstrip(".:")  # sentence punctuation in prose: "the password is: <value>."
            if m["after"] or _DOTTED_NAME.fullmatch(value):  # a call, a subscript or an attribute: code, not a literal
                continue
        words = [w for w in _WORD_SEPARATOR.split(_CAMEL_BOUNDARY.sub("_", name).lower()) if w]
        if words[-1] in _NOT_SECRET_NAME_ENDS or "public" in words or any(w.startswith("tokeniz") for w in words):
            continue
        if all(k["generic"] for k in keywords) and _NOT_SECRET_KEY_WORDS.intersection(words):
            continue
        if looks_random(value, password=any(k["pw"] for k in keywords)):
            done = m.start(group) + len(value)
            yield m.start(group), done


# Checked in this order; a later detector's match that overlaps an earlier one's is dropped, so
# `password = "ghp_..."` counts as a github_token, not a secret_assignment. The token patterns are
# ASCII-only (`(?a)`), so that `\b` ends a token before "ü" or "—" as it does before a space.
_DETECTORS: tuple[_Detector, ...] = (
    _Detector("private_key", _PRIVATE_KEY, ("PRIVATE KEY",), accept=lambda m: _KEY_MATERIAL.search(m[0]) is not None),
    _Detector("jwt", bounded_scan.compile(r"(?a)(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{10,}+={0,2}\.eyJ[A-Za-z0-9_\-]{10,}+={0,2}\.[A-Za-z0-9_\-]*+=*"), ("eyJ",)),
    _Detector(
        "aws_access_key",
        bounded_scan.compile(r"(?a)\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "github_token",
        bounded_scan.compile(r"(?a)\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{60,244})\b"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "slack_webhook",
        bounded_scan.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<path>T[A-Z0-9]{1,32}+/[A-Z0-9]{1,32}+/[A-Za-z0-9]{8,}+)"),
        ("hooks.slack.com",),
        group="path",
        accept=lambda m: not_placeholder(m["path"]) and "/B00000000/" not in m["path"],
    ),
    _Detector(
        "slack_token",
        bounded_scan.compile(r"(?a)\b(?:xox[abposre](?:\.xox[bp])?|xapp)-[0-9]{1,32}+-[A-Za-z0-9\-]{8,256}"),
        ("xox", "xapp-"),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "anthropic_key",
        bounded_scan.compile(r"(?a)\bsk-ant-[a-z]{1,32}+[0-9]{0,3}-[A-Za-z0-9_\-]{32,256}(?![A-Za-z0-9_\-])"),
        ("sk-ant-",),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "openai_key",
        bounded_scan.compile(r"(?a)\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_\-]{32,256})(?![A-Za-z0-9_\-])"),
        ("sk-",),
        accept=lambda m: not_placeholder(m[0]) and looks_random(m["body"], password=False),
    ),
    _Detector(
        "stripe_key",
        bounded_scan.compile(r"(?a)\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}\b"),
        ("_live_", "_test_"),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "webhook_secret",
        bounded_scan.compile(r"(?a)\bwhsec_[A-Za-z0-9_+/]{20,256}+={0,2}+"),
        ("whsec_",),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "twilio_key",
        bounded_scan.compile(r"(?a)\bSK[0-9a-fA-F]{32}\b"),
        ("SK",),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "azure_client_secret",
        bounded_scan.compile(r"(?a)(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"),
        ("Q~",),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "google_client_secret",
        bounded_scan.compile(r"(?a)\bGOCSPX-[A-Za-z0-9_\-]{28}(?![A-Za-z0-9_\-])"),
        ("GOCSPX-",),
        accept=_group_not_placeholder(0),
    ),
    _Detector(
        "google_api_key", bounded_scan.compile(r"(?a)\bAIza[A-Za-z0-9_\-]{35}(?![A-Za-z0-9_\-])"), ("AIza",), accept=_group_not_placeholder(0)
    ),
    _Detector("url_password", _URL_PASSWORD, ("://",), group="pw", accept=_real_url_password),
    _Detector(
        "auth_header",
        _AUTH_HEADER,
        ("uthorization",),
        group="value",
        accept=lambda m: looks_random(m["value"], password=False),
    ),
)
TYPES: tuple[str, ...] = (*(d.kind for d in _DETECTORS), "secret_assignment", "named_secret")
# One pass for what the detectors' hints and the name fragments check one by one: most texts (symbol
# signatures and docstrings by the hundred thousand) hold none of them and leave at once.
_ANY_HINT = re.compile("|".join(re.escape(hint) for detector in _DETECTORS for hint in detector.hints))
_ANY_FRAGMENT = re.compile("|".join(dict.fromkeys((*_NAME_FRAGMENTS, *named_secrets.FRAGMENTS))))


def _add(spans: list[tuple[int, int, str]], start: int, end: int, kind: str) -> None:
    """Insert a span into the sorted, disjoint `spans` unless it overlaps one already there."""
    index = bisect.bisect(spans, (start,))
    if (index and spans[index - 1][1] > start) or (index < len(spans) and spans[index][0] < end):
        return
    spans.insert(index, (start, end, kind))


def may_hold_secret(text: str) -> bool:
    """False when `text` holds none of the detectors' hints nor a name fragment: `redact` would return it as it is.
    Plain substrings, so the check of several texts joined is true whenever the check of any one of them is."""
    return _ANY_HINT.search(text) is not None or _ANY_FRAGMENT.search(text.lower()) is not None


def _around_hints(text: str, hints: tuple[str, ...], kind: str) -> Iterator[tuple[int, int]]:
    """What a detector whose scan ran out of time redacts instead: for a private key, from its BEGIN line to its
    END line (or the end of the text); for anything else, the run of non-space characters around each hint."""
    for hint in hints:
        position = text.find(hint)
        while position != -1:
            start, end = position, position + len(hint)
            if kind == "private_key":
                begin = text.rfind("-----BEGIN", max(0, start - 64), start)
                start = start if begin == -1 else begin
                close = text.find("-----END", end)
                tail = -1 if close == -1 else text.find("-----", close + len("-----END"))
                end = len(text) if tail == -1 else tail + len("-----")
            while start > 0 and not text[start - 1].isspace():
                start -= 1
            while end < len(text) and not text[end].isspace():
                end += 1
            yield start, end
            position = text.find(hint, end)


def _secret_words_to_line_ends(text: str) -> Iterator[tuple[int, int]]:
    """The stand-in for `_secret_assignments` when its scan was cut short: each name holding a secret-sounding
    word (`db_password`), and the rest of its line."""
    for position in fragment_positions(text, _NAME_FRAGMENTS):
        start = position
        while start > 0 and position - start < MAX_NAME and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
            start -= 1
        end = text.find("\n", position)
        yield start, len(text) if end == -1 else end


def redact(text: str, seconds: float = bounded_scan.SCAN_SECONDS) -> Redacted:
    """Replace every secret in `text` with `[REDACTED:<type>]`; text without one is returned as it is.

    The scans share `seconds`; a detector that runs out of them redacts around its hints instead (see
    `_around_hints`), which may hide more than the secret but never less."""
    if not may_hold_secret(text):
        return Redacted(text, {})
    budget = Budget(seconds)
    spans: list[tuple[int, int, str]] = []
    cut_short: list[str] = []
    for detector in _DETECTORS:
        hints = tuple(hint for hint in detector.hints if hint in text)
        if not hints:
            continue
        try:
            found = [
                m.span(detector.group)
                for m in bounded_scan.finditer(detector.pattern, text, budget)
                if detector.accept is None or detector.accept(m)
            ]
        except ScanTimedOut:
            cut_short.append(detector.kind)
            found = list(_around_hints(text, hints, detector.kind))
        for start, end in found:
            _add(spans, start, end, detector.kind)
    try:
        assignments = list(_secret_assignments(text, budget))
    except (ScanTimedOut, _Overread):
        cut_short.append("secret_assignment")
        assignments = list(_secret_words_to_line_ends(text))
    for start, end in assignments:
        _add(spans, start, end, "secret_assignment")
    try:
        named = list(named_secrets.find(text, budget))
    except ScanTimedOut:
        cut_short.append("named_secret")
        named = list(named_secrets.lines_with_words(text))
    for start, end in sorted(named):
        _add(spans, start, end, "named_secret")
    if cut_short:
        log.warning(
            "the secret scan of a %d-character text was cut short, by its %.1f s budget or its read limit (%s); "
            "redacted conservatively around what those detectors look for", len(text), seconds, ", ".join(cut_short),
        )  # fmt: skip
    if not spans:
        return Redacted(text, {})
    parts: list[str] = []
    counts: Counter[str] = Counter()
    position = 0
    for start, end, kind in spans:
        parts += (text[position:start], _MARKER.format(kind))
        counts[kind] += 1
        position = end
    parts.append(text[position:])
    return Redacted("".join(parts), dict(counts), tuple(cut_short))


class Scrubber:
    """Redacts each field of one record (its text, tags, session, paths...) and adds up what it replaced."""

    def __init__(self) -> None:
        self.found: Counter[str] = Counter()
        self.cut_short = False

    @property
    def count(self) -> int:
        return sum(self.found.values())

    def __call__(self, text: str) -> str:
        redacted = redact(text)
        self.found.update(redacted.found)
        self.cut_short = self.cut_short or bool(redacted.cut_short)
        return redacted.text

    def each(self, values: list[str]) -> list[str]:
        """Every value redacted; two that become the same marker are kept once."""
        return list(dict.fromkeys(self(value) for value in values))

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self(value)
