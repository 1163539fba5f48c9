"""The words of a question that say how it asks rather than what about: "what did we decide about", "remind me of".

Questions put to a project's ledger ask for what was decided, so "decide", "settle" and "agree" are how they are put,
not what they are about. Matched as BM25 terms they pull in whatever turn says "we just decided ..." or "settled",
on any topic: "what did we settle on for retries" ranked the definition of a settled payment above the retry
policy. Only first-person framing goes ("did we decide", "we agreed on", "remind me of"): in "what did Caroline decide
to do", the deciding may be what the question is about.
"""

from __future__ import annotations

import re

from project_ledger.text.text_signals import searchable_words

_ADVERB = r"(?:just|finally|already|ever|originally|initially|first|last|actually)\s+"
# Whole verb forms: "opt" or "land" would take the topic of "did we opt out of telemetry" or "a landing page".
_VERB = r"(?:decided|decide|agreed|agree|settled|settle|chose|chosen|choose|picked|pick|ended up|end up|went with|gone with|go with)"
_AFTER = r"(?:\s+(?:on|upon|about|for|with|to))?"
# Each alternative is a fixed sequence of bounded parts: matched in time linear in the query's length.
_FRAMING = re.compile(
    rf"\b(?:did|do|have|had|would|will)\s+(?:we|I)\s+(?:{_ADVERB})?{_VERB}{_AFTER}\b"
    rf"|\b(?:we|I)(?:'ve|\s+have)?\s+(?:{_ADVERB})?{_VERB}{_AFTER}\b"
    r"|\b(?:remind|tell)\s+(?:me|us)(?:\s+(?:again|of|about))?\b",
    re.IGNORECASE,
)


def topic(query: str) -> str:
    """`query` without its first-person framing; the query itself when nothing searchable would be left."""
    stripped = _FRAMING.sub(" ", query)
    return stripped if searchable_words(stripped) else query
