"""Session gists: structured bullets that cite the memories they came from, fitted to a token budget.

A gist is small enough to ride in every session, and it never stands alone:
each bullet ends with the ids of its sources, so the exact turn is one recall
away. This module is pure: what a session holds (`Material`), the extractive
gist built from it, rendering, and fitting. Writing a gist through the client's
model is in `gist_sampling.py`; storing it is `session_gists.py`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from project_ledger.memory.capture import propose, sentences
from project_ledger.models import Memory
from project_ledger.text.text_signals import content_words, specifics
from project_ledger.text.tokens import TokenCounter

Section = Literal["decisions", "definitions", "constraints", "questions", "todos"]
SECTIONS: dict[Section, str] = {
    "decisions": "Decisions",
    "definitions": "Definitions and interfaces",
    "constraints": "Constraints and conditions",
    "questions": "Open questions",
    "todos": "Todos",
}
KIND_SECTION: dict[str, Section] = {"decision": "decisions", "definition": "definitions", "constraint": "constraints", "todo": "todos"}
COVERED_OVERLAP = 0.6  # a sentence whose content words are this much inside a bullet's adds nothing to it
ORIGIN_LOOKBACK = 6  # turns before a memory searched for the one it was recorded from
FOOTER_TOKENS = 40  # kept free for the "(+N more left out …)" line

_NAME = re.compile(r"(?<=[\w,;:)] )[A-Z][\w\-]*")  # a capitalised word after another word, not a sentence's first
_OPEN_QUESTION = re.compile(
    r"\b(?:open question|not sure yet|TBD|to be decided|undecided|haven't decided|still need to (?:decide|figure out)|"
    r"decide later|unresolved|pending a decision|waiting (?:on|for) (?:an answer|a decision|\w+ to decide))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Material:
    """What a session holds: its turns and its typed memories (decisions, definitions, ...), oldest first."""

    session: str
    turns: list[Memory]
    memories: list[Memory]
    captured_from: dict[str, str] = field(default_factory=dict)  # captured memory id -> its turn's id

    @property
    def by_id(self) -> dict[str, Memory]:
        return {m.id: m for m in (*self.turns, *self.memories)}


@dataclass(frozen=True)
class Bullet:
    section: Section
    text: str
    sources: tuple[str, ...]
    superseded_by: str | None = None
    priority: int = 0  # lower is kept first when the budget is short

    def render(self) -> str:
        marker = f"(superseded by {self.superseded_by}) " if self.superseded_by else ""
        body = self.text.strip().replace("\n", "\n  ")
        return f"- {marker}{body} [{', '.join(self.sources)}]"


def origin(memory: Memory, turns: Sequence[Memory]) -> str | None:
    """The turn a memory was most likely recorded from: of the few turns before it, the one sharing most words."""
    before = [t for t in turns if t.created_at <= memory.created_at][-ORIGIN_LOOKBACK:]
    words = content_words(memory.text)
    best = max(before, key=lambda t: len(words & content_words(t.text)), default=None)
    return best.id if best is not None and len(words & content_words(best.text)) >= 2 else None


def _covered(words: frozenset[str], known: Sequence[frozenset[str]]) -> bool:
    return bool(words) and any(len(words & other) / len(words) >= COVERED_OVERLAP for other in known)


def _names(text: str) -> frozenset[str]:
    """Capitalised words past a sentence's first: the names a rule turns on (Celery is not Dramatiq)."""
    return frozenset(m.group(0).lower() for m in _NAME.finditer(text))


@dataclass(frozen=True)
class _Wording:
    """What two statements of one rule must share, read once per text: its content words, its numbers, identifiers
    and negations, and its names."""

    words: frozenset[str]
    specifics: frozenset[str]
    names: frozenset[str]

    @classmethod
    def of(cls, text: str) -> _Wording:
        return cls(content_words(text), specifics(text), _names(text))


def _shared_words(own: _Wording, other: _Wording) -> int:
    """How many content words two texts share when they state the same rule, else 0: most of the shorter one's words
    are in the other, and the numbers, identifiers, negations and names of one are all in the other ("at most 4
    tries" is not "at most 5", "use Celery" is not "use Dramatiq")."""
    shared = len(own.words & other.words)
    if not own.words or not other.words or shared < COVERED_OVERLAP * min(len(own.words), len(other.words)):
        return 0
    for mine, theirs in ((own.specifics, other.specifics), (own.names, other.names)):
        if not (mine <= theirs or theirs <= mine):
            return 0
    return shared


def _add(bullets: list[Bullet], wordings: list[_Wording], bullet: Bullet) -> None:
    """`bullet`, or its sources on the bullet that already states the same rule, the closest one (the user's
    statement, the agent's restatement and its record of it are one rule, cited by all three). `wordings` holds
    each kept bullet's, in order."""
    wording = _Wording.of(bullet.text)
    shared = [_shared_words(wording, kept) for kept in wordings]
    if not any(shared):
        bullets.append(bullet)
        wordings.append(wording)
        return
    n = shared.index(max(shared))
    bullets[n] = replace(bullets[n], sources=tuple(dict.fromkeys((*bullets[n].sources, *bullet.sources))))


def extractive(material: Material) -> list[Bullet]:
    """Bullets from the session's typed memories, then from turn sentences with decision, definition,
    constraint or todo cues, then open questions; a rule stated several times is one bullet citing each
    statement. Never fails."""
    bullets: list[Bullet] = []
    wordings: list[_Wording] = []
    recorded = {(KIND_SECTION.get(m.kind), origin(m, material.turns)) for m in material.memories if m.id not in material.captured_from}
    for memory in material.memories:
        section = KIND_SECTION.get(memory.kind)
        parent = material.captured_from.get(memory.id)
        if section is None or (section, parent) in recorded:  # the agent recorded what this turn decided: theirs wins
            continue
        priority = 5 if memory.superseded_by else 1 if parent else 0
        _add(bullets, wordings, Bullet(section, memory.text, (memory.id,), memory.superseded_by, priority))
    with_children = set(material.captured_from.values())
    for turn in material.turns:
        if turn.id in with_children:
            continue
        for proposal in propose(turn.text):
            _add(bullets, wordings, Bullet(KIND_SECTION[proposal.kind], proposal.text, (turn.id,), priority=2))
    known = [w.words for w in wordings]
    for index, turn in enumerate(material.turns):
        for sentence in sentences(turn.text):
            last_question = index == len(material.turns) - 1 and sentence.endswith("?")
            if (_OPEN_QUESTION.search(sentence) or last_question) and not _covered(content_words(sentence), known):
                bullets.append(Bullet("questions", sentence, (turn.id,), priority=3))
                known.append(content_words(sentence))
    return bullets


def header(material: Material, method: str) -> str:
    turns = material.turns
    span = f", {turns[0].created_at[:10]} to {turns[-1].created_at[:10]}" if turns else ""
    return f"Gist of session {material.session} ({len(turns)} turns{span}; {method}). [ids] are sources: recall(ids=...) for exact words."


def render(head: str, bullets: Sequence[Bullet], footer: str | None = None) -> str:
    lines = [head]
    for section, title in SECTIONS.items():
        items = [b for b in bullets if b.section == section]
        if items:
            lines += [f"{title}:", *(b.render() for b in items)]
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def fit(head: str, bullets: Sequence[Bullet], budget: int, tokens: TokenCounter, session: str) -> tuple[list[Bullet], int, str]:
    """The bullets that fit `budget` tokens (by priority, then order), how many were left out, and the text."""
    order = sorted(range(len(bullets)), key=lambda i: (bullets[i].priority, i))
    used = tokens.count(head) + FOOTER_TOKENS
    kept: set[int] = set()
    titled: set[str] = set()
    for i in order:
        bullet = bullets[i]
        cost = tokens.count(bullet.render()) + 1 + (0 if bullet.section in titled else tokens.count(SECTIONS[bullet.section]) + 2)
        if used + cost <= budget:
            kept.add(i)
            titled.add(bullet.section)
            used += cost
    chosen = [bullets[i] for i in sorted(kept)]
    while True:
        left_out = len(bullets) - len(chosen)
        footer = f"(+{left_out} more left out to fit {budget} tokens: recall with session={session})" if left_out else None
        text = render(head, chosen, footer)
        if tokens.fits(text, budget) or not chosen:
            return chosen, left_out, text
        worst = max(range(len(chosen)), key=lambda i: (chosen[i].priority, i))
        chosen.pop(worst)
