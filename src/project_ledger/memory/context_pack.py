"""Fitting sections of context into one token budget. Pure apart from counting tokens.

A pack is a list of sections in priority order, each a list of items in
priority order. When everything does not fit, items are dropped whole, from
the lowest-priority section first and, within it, the lowest-ranked item
first; a closing line says what was left out and how to fetch it. Sections
are rendered in the order given, so callers decide what sits at the start
and the end of the block.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from project_ledger.text.tokens import TokenCounter

NOTE_RESERVE = 90  # tokens kept free for the line that says what was left out
MAX_LISTED_IDS = 12


@dataclass(frozen=True)
class PackItem:
    text: str
    id: str | None = None  # a memory id, listed in the note when the item is left out


@dataclass(frozen=True)
class PackSection:
    name: str  # the key in the token breakdown
    heading: str | None
    items: Sequence[PackItem]  # most important first
    left_out_hint: str = ""  # how to fetch what did not fit
    unit: str = "items"
    prefix_only: bool = False  # keep a leading run only: a file with a hole in it would read wrong
    newest_last: bool = False  # rendered in reverse priority order (recent turns: the latest at the very end)
    joiner: str = "\n"


@dataclass(frozen=True)
class Pack:
    text: str
    tokens: int
    sections: dict[str, int]
    ids: list[str]
    left_out: list[str]
    truncated: bool


def _block(section: PackSection, picked: Sequence[int]) -> str:
    order = sorted(picked, reverse=section.newest_last)
    body = section.joiner.join(section.items[i].text for i in order)
    return f"{section.heading}\n{body}" if section.heading else body


def _note(sections: Sequence[PackSection], chosen: dict[str, list[int]], budget: int, with_ids: bool = True) -> str | None:
    parts = []
    for section in sections:
        kept = set(chosen[section.name])
        missing = [i for i in range(len(section.items)) if i not in kept]
        if not missing:
            continue
        ids = [item_id for i in missing if (item_id := section.items[i].id)] if with_ids else []
        listed = ", ".join(ids[:MAX_LISTED_IDS]) + (f" and {len(ids) - MAX_LISTED_IDS} more" if len(ids) > MAX_LISTED_IDS else "")
        what = f"{len(missing)} {section.unit}" + (f" ({listed})" if listed else "")
        parts.append(what + (f": {section.left_out_hint}" if section.left_out_hint else ""))
    return f"[Left out to fit {budget} tokens: {'; '.join(parts)}.]" if parts else None


def _render(sections: Sequence[PackSection], chosen: dict[str, list[int]], note: str | None) -> str:
    blocks = [_block(s, chosen[s.name]) for s in sections if chosen[s.name]]
    return "\n\n".join([*blocks, *([note] if note else [])])


def assemble(sections: Sequence[PackSection], budget: int, tokens: TokenCounter) -> Pack:
    """The sections fitted into `budget` tokens (tiktoken cl100k), whole items only."""
    chosen = {s.name: list(range(len(s.items))) for s in sections}
    text = _render(sections, chosen, None)
    if not tokens.fits(text, budget):
        chosen = _greedy(sections, budget - NOTE_RESERVE, tokens)
        while True:
            note = _note(sections, chosen, budget)
            text = _render(sections, chosen, note)
            if tokens.count(text) <= budget:
                break
            dropped = next((s for s in reversed(sections) if chosen[s.name]), None)
            if dropped is None:  # nothing but the note is left, and it is too long: drop the ids, then the hints
                text = _note(sections, chosen, budget, with_ids=False) or ""
                if tokens.count(text) > budget:
                    text = f"[Nothing fits in {budget} tokens; ask for a larger token_budget.]"
                break
            chosen[dropped.name].pop()
    breakdown = {s.name: tokens.count(_block(s, chosen[s.name])) for s in sections if chosen[s.name]}
    ids = [item.id for s in sections for i, item in enumerate(s.items) if item.id and i in chosen[s.name]]
    left_out = [item.id for s in sections for i, item in enumerate(s.items) if item.id and i not in chosen[s.name]]
    truncated = any(len(chosen[s.name]) < len(s.items) for s in sections)
    return Pack(text=text, tokens=tokens.count(text), sections=breakdown, ids=ids, left_out=left_out, truncated=truncated)


def _greedy(sections: Sequence[PackSection], room: int, tokens: TokenCounter) -> dict[str, list[int]]:
    """Take items in priority order while they fit (separators count as one token each)."""
    chosen: dict[str, list[int]] = {}
    for section in sections:
        picked: list[int] = []
        heading = tokens.count(section.heading) + 2 if section.heading else 1
        for i, item in enumerate(section.items):
            cost = tokens.count(item.text) + 1 + (0 if picked else heading)
            if cost <= room:
                picked.append(i)
                room -= cost
            elif section.prefix_only:
                break
        chosen[section.name] = picked
    return chosen


def cache_key(sections: Sequence[PackSection], budget: int) -> str:
    """A digest of everything the pack depends on."""
    digest = hashlib.sha256(str(budget).encode())
    for section in sections:
        digest.update(repr(dataclasses.astuple(section)).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class PackCache:
    """The last session-start pack, on disk, keyed by `cache_key`.

    Counting tokens needs tiktoken's encoding, which takes about half a second
    to load; the session-start pack is the server's instructions, built before
    the MCP handshake is answered (with the encoding only when it does not fit
    the cap by its byte length), and it is the same from one start to the next
    until the file or the pins change.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, key: str) -> Pack | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return Pack(**data["pack"]) if data.get("key") == key else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def put(self, key: str, pack: Pack) -> None:
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps({"key": key, "pack": dataclasses.asdict(pack)}), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:  # a cache that cannot be written only costs time
            pass
