"""Writing a gist with the client's model (MCP sampling), map-reduce style, and checking what comes back.

The session is cut into chunks that each fit `chunk_tokens`; the model turns
each chunk into cited bullets (map), and the bullets of all chunks are merged
into one gist (reduce, repeated while they do not fit one request). What the
model writes is not trusted: a bullet survives only if it names a known
section, cites ids that exist in the session, and every identifier and number
it mentions appears in the session's text. The rest are dropped and counted.

`Writer` is the only way out: a function from (system prompt, user prompt,
max tokens) to the model's text. The MCP layer supplies it; this module knows
nothing of MCP.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from project_ledger.memory.gist import SECTIONS, Bullet, Material, Section
from project_ledger.text.text_signals import identifier_candidates
from project_ledger.text.tokens import TokenCounter

Writer = Callable[[str, str, int], str]
PROMPT_OVERHEAD = 80  # tokens of instructions around the lines of one request

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*")
# A bullet's section label: `- Decision: ...` or `Decision | ...`; its text and `[ids]` are cut out of the rest.
_SECTION = re.compile(r"(?<![ \t])[ \t]*+(?:[-*][ \t]*+)?(?P<section>[A-Za-z][A-Za-z ]{0,40}?)[ \t]*+[:|]")
_ALIASES: dict[str, Section] = {
    **{name: name for name in SECTIONS},
    "decision": "decisions",
    "definition": "definitions",
    "interfaces": "definitions",
    "definitions and interfaces": "definitions",
    "constraint": "constraints",
    "conditions": "constraints",
    "constraints and conditions": "constraints",
    "question": "questions",
    "open questions": "questions",
    "todo": "todos",
}

SYSTEM = (
    "You condense a coding session into a gist for a project memory ledger. Output only bullet lines, one per line, "
    "in the form `section: text [id, id]`, where section is one of decisions, definitions, constraints, questions, "
    "todos. Keep exact names, signatures, numbers and conditions verbatim; never invent an identifier. Every line "
    "must cite, in square brackets, the ids (like m0abc12345) of the lines it came from. Prefer current "
    "decisions; a decision later replaced is not a current one."
)


class SamplingFailed(Exception):
    """The client could not or would not write: refused, timed out, unsupported, or errored.

    Carries what was spent before it failed, so the result can still report it.
    """

    def __init__(self, reason: str, requests: int = 0, dropped: Counter[str] | None = None) -> None:
        super().__init__(reason)
        self.requests = requests
        self.dropped = dropped if dropped is not None else Counter()


@dataclass(frozen=True)
class Sampled:
    bullets: list[Bullet]
    dropped: Counter[str]
    requests: int


def material_lines(material: Material) -> list[str]:
    """The session as the model reads it: `[id] who: text`, oldest first, typed memories among the turns."""
    items = sorted((*material.turns, *material.memories), key=lambda m: m.created_at)
    lines = []
    for memory in items:
        who = (memory.role or "turn") if memory.kind == "turn" else memory.kind
        if memory.superseded_by:
            who += f" (replaced by {memory.superseded_by})"
        lines.append(f"[{memory.id}] {who}: {memory.text}")
    return lines


def chunks(lines: Sequence[str], budget: int, tokens: TokenCounter) -> list[list[str]]:
    """Consecutive lines grouped so each group costs at most `budget` tokens (a longer line goes alone, cut)."""
    groups: list[list[str]] = [[]]
    used = 0
    for line in lines:
        cost = tokens.count(line) + 1
        while cost > budget:  # one line longer than a request: cut it, in proportion, until it fits
            line = line[: max(len(line) * budget // cost - 1, 1)]
            cost = tokens.count(line) + 1
        if used + cost > budget and groups[-1]:
            groups.append([])
            used = 0
        groups[-1].append(line)
        used += cost
    return [group for group in groups if group]


def parse(text: str) -> tuple[list[tuple[Section, str, tuple[str, ...]]], int]:
    """Bullet lines the model wrote, and how many non-empty lines were not bullets in the format."""
    bullets = []
    malformed = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        parsed = _bullet(line)
        section = _ALIASES.get(parsed[0].strip().lower()) if parsed else None
        if parsed is None or section is None:
            malformed += 1
            continue
        bullets.append((section, parsed[1], parsed[2]))
    return bullets, malformed


def _bullet(line: str) -> tuple[str, str, tuple[str, ...]] | None:
    """`- Section: text [id, id]` as (section, text, ids), or None when the line is not in that shape."""
    head = _SECTION.match(line)
    rest = line[head.end() :].rstrip() if head else ""
    opening = rest.rfind("[")
    if not rest.endswith("]") or opening == -1 or "]" in rest[opening:-1]:
        return None
    text, cited = rest[:opening].strip(), rest[opening + 1 : -1]
    ids = tuple(part.strip().strip("`") for part in cited.split(",") if part.strip())
    return (head.group("section"), text, ids) if head and text and cited.strip() else None


def validate(
    parsed: Sequence[tuple[Section, str, tuple[str, ...]]], material: Material
) -> tuple[list[Bullet], Counter[str]]:
    """Keep the bullets whose ids all exist in the session and whose names and numbers all appear in it."""
    known = material.by_id
    corpus = "\n".join(m.text for m in known.values())
    kept: list[Bullet] = []
    dropped: Counter[str] = Counter()
    for section, text, ids in parsed:
        if not ids or any(i not in known for i in ids):
            dropped["cites an id not in the session"] += 1
        elif any(name not in corpus for name in identifier_candidates(text)):
            dropped["names an identifier not in the session"] += 1
        elif any(number not in corpus for number in _NUMBER.findall(text)):
            dropped["states a number not in the session"] += 1
        else:
            decisions = [known[i] for i in ids if known[i].kind == "decision"]
            replaced = decisions[0].superseded_by if decisions and all(d.superseded_by for d in decisions) else None
            kept.append(Bullet(section, text, ids, replaced, priority=4 if replaced else 0))
    return kept, dropped


def _map_prompt(lines: Sequence[str], part: int, parts: int) -> str:
    return (
        f"Part {part} of {parts} of the session, one line per turn or recorded memory:\n\n"
        + "\n".join(lines)
        + "\n\nWrite the bullet lines for this part."
    )


def _reduce_prompt(bullets: Sequence[str], max_tokens: int) -> str:
    return (
        "These bullet lines were written from consecutive parts of one session. Merge them into one gist of at most "
        f"{max_tokens} tokens: drop repeats, keep the later of two conflicting decisions, keep every id cited.\n\n"
        + "\n".join(bullets)
    )


def write(material: Material, writer: Writer, max_tokens: int, chunk_tokens: int, max_requests: int, tokens: TokenCounter) -> Sampled:
    """Map each chunk to bullets, reduce them to one gist; raise `SamplingFailed` if the client fails or the
    session needs more than `max_requests` requests."""
    room = chunk_tokens - tokens.count(SYSTEM) - PROMPT_OVERHEAD  # what each request's lines may take
    parts = chunks(material_lines(material), room, tokens)
    if len(parts) > max_requests:
        raise SamplingFailed(f"the session needs {len(parts)} sampling requests; the limit is {max_requests}")
    requests = 0
    dropped: Counter[str] = Counter()

    def ask(prompt: str) -> list[Bullet]:
        nonlocal requests
        requests += 1
        try:
            answer = writer(SYSTEM, prompt, max_tokens)
        except SamplingFailed as exc:
            raise SamplingFailed(str(exc), requests, dropped) from None
        parsed, malformed = parse(answer)
        kept, rejected = validate(parsed, material)
        dropped.update(rejected)
        if malformed:
            dropped["not a bullet line"] += malformed
        return kept

    bullets = [b for i, part in enumerate(parts, 1) for b in ask(_map_prompt(part, i, len(parts)))]
    while len(parts) > 1 and bullets:
        groups = chunks([f"{b.section}: {b.text} [{', '.join(b.sources)}]" for b in bullets], room, tokens)
        if requests + len(groups) > max_requests:
            raise SamplingFailed(f"merging the parts needs more than {max_requests} sampling requests", requests, dropped)
        merged = [b for group in groups for b in ask(_reduce_prompt(group, max_tokens))]
        if not merged:  # a merge that kept nothing valid: the parts' checked lines are still good
            break
        bullets = merged
        if len(groups) == 1:
            break
    return Sampled(bullets, dropped, requests)
