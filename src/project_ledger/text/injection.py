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
  one of the tags memories are rendered in, so no text can end its own record.
"""

from __future__ import annotations

import re

RECORD_TAGS = ("memory", "turn", "gist")  # the tags stored text is rendered in (memory/context_sections.py)

_VERB = r"\b(?:ignore|disregard|override|bypass|forget)\b"
_DROP_EARLIER = re.compile(
    # "ignore all previous instructions", "disregard the prior rules", "forget your system prompt"
    _VERB + r"[^.\n]{0,40}?\b(?:previous|prior|above|earlier|preceding|system|original|initial)\b[^.\n]{0,30}?"
    r"\b(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|messages?|context)\b"
    # "ignore your instructions", "bypass the guardrails"; not "ignore the lint rules"
    r"|" + _VERB + r"\s+(?:all\s+)?(?:of\s+)?(?:your|the|these|those|any|my)\s+"
    r"(?:instructions|system\s+prompt|prompt|guardrails|directives|guidelines|safety\s+\w+)\b"
    r"|\b(?:ignore|disregard)\s+(?:everything|anything|all|the)\s+(?:above|before|said\s+before|previously\s+said)\b",
    re.IGNORECASE,
)
_NEW_ROLE = re.compile(
    r"\byou\s+must\s+now\b|\byou\s+will\s+now\s+(?:act|behave|respond|ignore|obey|follow|reveal)\b"
    r"|\byou\s+are\s+now\s+(?:a|an|the|in|my|no\s+longer|free|unrestricted|jailbroken|DAN)\b"
    r"|\bnew\s+(?:system\s+)?(?:instructions?|persona)\s*:"
    r"|\b(?:pretend|roleplay|role-play)\s+(?:to\s+be|as|that\s+you)\b|\bact\s+as\s+if\s+you\b"
    r"|\b(?:do\s+not|don't|never)\s+(?:tell|inform|warn|mention\s+(?:this\s+)?to)\s+the\s+user\b",
    re.IGNORECASE,
)
_ROLE_MARKER = re.compile(
    r"^\s*(?:system|developer)\s*:|^\s*#{1,6}\s*(?:system|instructions?)(?:\s+prompt)?\s*:?\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_TEMPLATE_TOKEN = re.compile(
    r"<\|(?:im_start|im_end|system|user|assistant|begin_of_text|start_header_id|end_header_id|eot_id)\|>"
    r"|\[/?INST\]|<</?SYS>>",
    re.IGNORECASE,
)
_TAG = re.compile(r"<\s*/?\s*(?:" + "|".join(RECORD_TAGS) + r"|system|instructions?)\b", re.IGNORECASE)
_RECORD_TAG = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(RECORD_TAGS) + r")\b)", re.IGNORECASE)


def looks_like_instructions(text: str) -> bool:
    """Whether `text` reads like an instruction to the model reading it rather than a record of the project."""
    return any(pattern.search(text) for pattern in (_DROP_EARLIER, _NEW_ROLE, _ROLE_MARKER, _TEMPLATE_TOKEN, _TAG))


def defang(text: str) -> str:
    """`text` with each `<` that would start one of the record tags written as `&lt;`, so that it cannot close
    (or open) the record it is rendered in. Everything else is left as it is."""
    return _RECORD_TAG.sub("&lt;", text)
