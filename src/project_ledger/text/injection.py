"""Stored text that reads like instructions to the model, and rendering that keeps stored text inside its delimiters.

Memories reach a model's context: in recall results, context packs, the
session-start instructions. A memory saying "ignore the previous instructions"
is then a prompt injection that persists. Two defences, both pure functions:

- `looks_like_instructions` flags such text when it is written (it is kept
  verbatim; the flag travels with it, and the session-start pack leaves
  flagged memories out). It looks for the shapes injections take: orders to
  drop earlier instructions, a new role or persona for the agent, chat-template
  and role markers, fake system headings, and tags that would close the
  delimiters memories are rendered in. It is a tripwire, not a proof: a
  paraphrase can pass it, which is why every memory is delimited anyway.
- `defang` escapes, inside a memory's text, anything that would open or close
  one of the tags memories are rendered in, so no text can end its own record;
  `attribute` does the same for the fields in the opening tag (tags, session,
  role, paths, dates), which are quoted and escaped unless they are plain words.
"""

from __future__ import annotations

import logging
import re

import regex

from project_ledger.text import bounded_scan
from project_ledger.text.bounded_scan import Budget, ScanTimedOut

log = logging.getLogger(__name__)

RECORD_TAGS = ("memory", "turn", "gist")  # the tags stored text is rendered in (memory/context_sections.py)

_VERB = r"\b(?:ignore|disregard|override|bypass|forget)\b"
_DROP_EARLIER = bounded_scan.compile(
    # "ignore all previous instructions", "disregard the prior rules", "forget your system prompt"
    _VERB + r"[^.\n]{0,40}?\b(?:previous|prior|above|earlier|preceding|system|original|initial)\b[^.\n]{0,30}?"
    r"\b(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|messages?|context)\b"
    # "ignore your instructions", "bypass the guardrails"; not "ignore the lint rules"
    r"|" + _VERB + r"\s+(?:all\s+)?(?:of\s+)?(?:your|the|these|those|any|my)\s+"
    r"(?:instructions|system\s+prompt|prompt|guardrails|directives|guidelines|safety\s+\w+)\b"
    r"|\b(?:ignore|disregard)\s+(?:everything|anything|all|the)\s+(?:above|before|said\s+before|previously\s+said)\b",
    regex.IGNORECASE,
)
_NEW_ROLE = bounded_scan.compile(
    r"\byou\s+must\s+now\b|\byou\s+will\s+now\s+(?:act|behave|respond|ignore|obey|follow|reveal)\b"
    r"|\byou\s+are\s+now\s+(?:a|an|the|in|my|no\s+longer|free|unrestricted|jailbroken|DAN)\b"
    r"|\bnew\s+(?:system\s+)?(?:instructions?|persona)\s*:"
    r"|\b(?:pretend|roleplay|role-play)\s+(?:to\s+be|as|that\s+you)\b|\bact\s+as\s+if\s+you\b"
    r"|\b(?:do\s+not|don't|never)\s+(?:tell|inform|warn|mention\s+(?:this\s+)?to)\s+the\s+user\b",
    regex.IGNORECASE,
)
# Within one line: `\s` would let each line's start read every blank line after it.
_ROLE_MARKER = bounded_scan.compile(
    r"^[ \t]*+(?:system|developer)[ \t]*+:|^[ \t]*+#{1,6}[ \t]*+(?:system|instructions?)(?:[ \t]++prompt)?[ \t]*+:?[ \t]*+$",
    regex.IGNORECASE | regex.MULTILINE,
)
_TEMPLATE_TOKEN = bounded_scan.compile(
    r"<\|(?:im_start|im_end|system|user|assistant|begin_of_text|start_header_id|end_header_id|eot_id)\|>"
    r"|\[/?INST\]|<</?SYS>>",
    regex.IGNORECASE,
)
_TAG = bounded_scan.compile(r"<\s*+/?\s*+(?:" + "|".join(RECORD_TAGS) + r"|system|instructions?)\b", regex.IGNORECASE)
_PLAIN_VALUE = re.compile(r"[\w.:/@+,#\-]++")  # needs no quotes: ids, kinds, dates, ordinary tags and paths
_ESCAPES = {ord("&"): "&amp;", ord('"'): "&quot;", ord("<"): "&lt;", ord(">"): "&gt;"}
_ESCAPES.update({c: f"&#{c};" for c in (*range(0x20), *range(0x7F, 0xA0))})
_RECORD_TAG = re.compile(r"<(?=\s*+/?\s*+(?:" + "|".join(RECORD_TAGS) + r")\b)", re.IGNORECASE)


def looks_like_instructions(text: str, seconds: float = bounded_scan.SCAN_SECONDS) -> bool:
    """Whether `text` reads like an instruction to the model reading it rather than a record of the project.

    A text whose check runs out of `seconds` counts as one: flagged, it is kept out of what reaches the model
    unasked, and `recall` still returns it."""
    budget = Budget(seconds)
    try:
        return any(
            bounded_scan.search(pattern, text, budget) for pattern in (_DROP_EARLIER, _NEW_ROLE, _ROLE_MARKER, _TEMPLATE_TOKEN, _TAG)
        )
    except ScanTimedOut:
        log.warning("the instruction check of a %d-character text ran past its %.1f s budget; flagged suspicious", len(text), seconds)
        return True


def attribute(name: str, value: str) -> str:
    """`name=value` for a record's opening tag; a value that is not plain is quoted, with quotes, angle brackets,
    ampersands and control characters as character references, so no field can end its tag or its record."""
    return f"{name}={value}" if _PLAIN_VALUE.fullmatch(value) else f'{name}="{value.translate(_ESCAPES)}"'


def defang(text: str) -> str:
    """`text` with each `<` that would start one of the record tags written as `&lt;`, so that it cannot close
    (or open) the record it is rendered in. Everything else is left as it is."""
    return _RECORD_TAG.sub("&lt;", text)
