"""Write-time capture: the decisions, definitions, constraints and todos a turn clearly states.

Cheap, model-free extractors run on every remembered turn. They read sentence by
sentence and propose a typed child memory only where a sentence carries a strong
cue ("let's use", "switch to", `def f(x: int)`, "only on", "must not", "TODO",
"later"), and is not a question or a hedge ("I'd suggest", "maybe", "should we").
Precision matters more than recall: a wrong decision in the ledger misleads every
later session, while a missed one is still in the raw turn, one recall away.
`benchmarks/layered_memory.py` measures both against hand labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from project_ledger.text.text_signals import content_words, identifier_candidates

CaptureKind = Literal["definition", "todo", "constraint", "decision"]
MAX_PER_TURN = 3
MIN_CONTENT_WORDS = 3
MAX_SENTENCE_CHARS = 600

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])|\n+")
_FENCE = re.compile(r"```.*?```", re.DOTALL)


def _cues(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


# Checked in this order; a sentence yields at most one proposal, of the first kind that matches.
_KINDS: tuple[tuple[CaptureKind, re.Pattern[str]], ...] = (
    (
        "todo",
        _cues(
            r"\bTODO\b",
            r"\bto-?do\s*:",
            # "remind me to ..." sets a task; "remind me how/what/of ..." asks for something back (a question)
            r"\bremind (?:me|us)(?:\s+(?:later|again|tomorrow|next (?:week|sprint|session|time)))?\s+to\b",
            r"\bfollow[- ]up\s*:",
            r"\b(?:add|do|fix|revisit|handle|write|clean up|look at|deal with|tackle|come back to|file|open|replace|build|"
            r"implement|document|migrate|automate|wire|split|move)\b[^.?!]{0,80}\b(?:later|next (?:week|sprint|session|time))\b",
            r"\b(?:later|next (?:week|sprint|session|time))\b[^.?!]{0,40}\b(?:we|I|you)(?:'ll| will| need to| have to| should)\b",
            r"\b(?:we|I) (?:still )?(?:need|have) to\b[^.?!]{0,80}\b(?:later|eventually|before (?:launch|release|go-live))\b",
            r"\bfor later\b",
            r"\bstill (?:need|have) to (?:decide|figure out|add|build|write|fix|handle|sort out)\b",
            r"\bonce (?:there's|there is|we have|we've|it's)\b[^.?!]{0,60}$",
            r"\b(?:park|parked|parking) (?:it|that|this)\b",
            r"\bput (?:it|that|this) on the (?:backlog|list)\b",
            r"\bon the backlog\b",
        ),
    ),
    (
        "definition",
        _cues(
            r"`(?:async\s+)?def\s+\w+\(",
            r"`(?:class|interface|struct|enum|type)\s+[A-Z]\w*",
            r"`\w[\w.]*\([^`()]*\w\s*:\s*[\w\[\]|., ]+[^`]*\)(?:\s*->\s*[^`]+)?`",  # name(arg: Type, ...) -> Ret
            r"`\w[\w.]*\([^`]*\)\s*->\s*[^`]+`",
            r"\bCREATE TABLE\b",
            r"\b(?:with|has|have|takes)\s+(?:the\s+)?(?:fields|columns|attributes|members|values|keys)\b",
            r"\b(?:fields|columns|attributes|members|values|keys)\s*(?:are|:)\s*`",
            r"\b(?:signature|schema|shape) (?:is|:)",
            r"\b[a-z_][\w.]*\((?:\s*[a-z_]\w*(?:\s+\w+)?\s*,){2,}\s*[a-z_]\w*[^()]*\)",  # table(col, col, col)
            r"\b\w+: [\w\[\]]+(?: \([^)]*\))?,\s*\w+: [\w\[\]]+",  # field: type, field: type
            r"\b[a-z_]+\.[a-z_]+\s+(?:VARCHAR|CHAR|TEXT|NUMERIC|DECIMAL|BIGINT|INTEGER|INT|JSONB|TIMESTAMPTZ|BOOLEAN|UUID)\b",
            r"\b\w+:\{\w+\}",  # key formats such as dedup:{tenant_id}
            r"\{\s*\"\w+\"\s*:",  # a JSON shape
        ),
    ),
    (
        "constraint",
        _cues(
            r"\bonly (?:on|if|when|for|in|with|after|before|from|via|through|by|once)\b",
            r"\bmust(?:n't| not| never| always)?\b",
            r"(?:\b(?:never|must not|mustn't|should not|shouldn't)|(?:^|[;:,]\s*)(?:don't|do not))\s+(?:use|call|store|log|commit|push|"
            r"deploy|run|touch|change|send|expose|delete|retry|block|import|put|write|bill|charge|round|drop|edit|rely|mix|hard-?code|"
            r"trust|return|share)\b",
            r"\b(?:requires?|required)\b(?!-)",  # not requires-python
            r"\bunless\b",
            r"\b(?:at most|at least|no more than|no less than|no later than|maximum of|minimum of|limited to|capped at)\s+\S*\d",
            r"\bnot allowed\b",
            r"\bhas to (?:be|match)\b",
            r"\bup to \d",
            r"\bunique\b",
            r"\b(?:is|are|gets?) rejected\b|\brejected with\b",
            r"\benforced\b",
            r"\bdeadline\b",
            r"\bcap (?:it |a \w+ )?at \d",
        ),
    ),
    (
        "decision",
        _cues(
            r"\b(?:we|I)(?:'ve| have)?\s+(?:chose|picked|opted)\b",
            r"\blet'?s (?:just )?(?:use|go with|switch|keep|stick with|move|adopt|store|drop|rename|standardi[sz]e|"
            r"default|replace|make it|put|pin|go for|do it with)\b",
            r"\b(?:we'll|we will|I'll|going to|let's) go with\b",
            r"\b(?:go|going) with\b[^.?!]{0,60}\b(?:then|it is|for now)\b",
            r"\bswitch(?:ing|ed)?\b[^.?!]{0,40}\bto\b",
            r"\b(?:we|I)(?:'ll| will) (?:use|keep|stick with|standardi[sz]e on|move to|switch to)\b",
            r"\bfrom now on\b",
            r"^(?:OK|Okay)\s*[:,]\s+\S",  # the assistant confirming the setup it was asked for
            r"\b(?:I'll|we'll) (?:set|use|keep|make)\b",
            r"\binstead of\b",
            r"\bstick with\b",
        ),
    ),
)

# Said to be decided, whatever else the sentence says ("We just decided the API must stay versioned"): a decision,
# checked before the other kinds, whose cues ("must") it may also hold; if what follows the cue says what was decided
# ("We decided the retry policy." names a topic only, and the next turn or a recorded memory holds the decision).
_STATES = re.compile(r"[:=\d]|\b(?:to|that|on|is|are|was|were|will|must|should|never|always|only|uses?|using)\b", re.IGNORECASE)
_DECIDED = _cues(r"\b(?:we|I)(?:'ve| have)?\s+(?:just\s+|already\s+|finally\s+|now\s+)?(?:decided|agreed|settled on)\b", r"\bdecision\s*:")

_HEDGES = _cues(
    r"\?\s*$",
    r"\b(?:maybe|perhaps|might|could we|would you|should we|shall we|do we|what if|not sure|I'd suggest|I suggest|"
    r"I'd propose|I propose|how about|consider|alternatively|unless you|if you want|if you'd|do you want|would it)\b",
    r"^\s*(?:if|whether)\b",
    r"^\s*(?:proposal|suggestion|idea|option)\s*:",  # put forward, not decided
)

# The agent reporting what it stored ("Recorded the retry decision in the ledger and implemented it: ..."): its own
# `remember` call holds the memory, and a copy captured from the report would compete with it. Not "Pinned ...": an
# agent pinning a version in the code states a decision.
_REPORTS = _cues(r"^\s*(?:I(?:'ve| have)\s+)?(?:recorded|stored|saved|remembered)\b", r"\b(?:in|to|into) the ledger\b")


@dataclass(frozen=True)
class Proposal:
    kind: CaptureKind
    text: str  # the sentence that states it, verbatim


def sentences(text: str) -> list[str]:
    """Split a turn into sentences; fenced code blocks stay whole (a definition often is one)."""
    pieces: list[str] = []
    last = 0
    for fence in _FENCE.finditer(text):
        pieces += _SENTENCE_END.split(text[last : fence.start()])
        pieces.append(fence.group(0))
        last = fence.end()
    pieces += _SENTENCE_END.split(text[last:])
    return [piece.strip() for piece in pieces if piece and piece.strip()]


def classify(sentence: str) -> CaptureKind | None:
    """The kind a sentence clearly states, or None."""
    if len(sentence) > MAX_SENTENCE_CHARS or len(content_words(sentence)) < MIN_CONTENT_WORDS:
        return None
    if not sentence.startswith("```") and (_HEDGES.search(sentence) or _REPORTS.search(sentence)):
        return None
    if (decided := _DECIDED.search(sentence)) and (decided[0].lower().endswith(" on") or _STATES.search(sentence, decided.end())):
        return "decision"
    for kind, cues in _KINDS:
        if cues.search(sentence):
            if kind == "definition" and not identifier_candidates(sentence):
                return None  # a definition names its identifiers exactly
            return kind
    return None


def propose(text: str) -> list[Proposal]:
    """What a turn clearly states, in order, at most `MAX_PER_TURN`. Adjacent sentences of one kind state one
    thing and are kept together, verbatim, as one proposal."""
    found: list[Proposal] = []
    last = -2
    for index, sentence in enumerate(sentences(text)):
        kind = classify(sentence)
        if kind is None:
            continue
        if found and found[-1].kind == kind and index == last + 1:
            start = text.find(found[-1].text)
            span = text[start : text.find(sentence, start) + len(sentence)]
            if len(span) <= MAX_SENTENCE_CHARS:
                found[-1] = Proposal(kind, span)
                last = index
                continue
        found.append(Proposal(kind, sentence))
        last = index
    return found[:MAX_PER_TURN]
