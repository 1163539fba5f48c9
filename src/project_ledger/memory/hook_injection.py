"""What a prompt's hook hands the agent unasked: which of a recall's memories (`choose_injection`), and how they
are written into the prompt's context (`render_injection`). Pure functions."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from project_ledger.models import RecallHit
from project_ledger.text.dialogue_act import dialogue_act
from project_ledger.text.excerpt import excerpt
from project_ledger.text.injection import attribute, defang

INJECTED_TEXT_TOKENS = 70  # longest excerpt of one memory in an injection
MAX_INJECTED = 4


def choose_injection(
    hits: Iterable[RecallHit], *, session: str, floor: float, exclude: Iterable[str] = ()
) -> list[RecallHit]:
    """Of a recall's results (best first), those worth handing the agent unasked: relevant above the hook's own
    floor, statements (`dialogue_act`: an earlier question, an "ok" or a tool's log line answers nothing), and not
    already in front of it (this session's turns, the prompt just stored and what was captured from it, what its
    start pack delivered).

    The one place that decides what is injected. A memory whose text reads like an instruction to the model
    (`suspicious`) is never pushed into a prompt: it reaches the agent only when asked for, through `recall`.
    """
    skip = set(exclude)
    chosen = [
        hit
        for hit in hits
        if hit.relevance is not None
        and hit.relevance >= floor
        and dialogue_act(hit.text) == "statement"
        and hit.id not in skip
        and not hit.suspicious
        and not (hit.kind == "turn" and hit.session == session)
    ]
    # What was decided or written down comes before what was merely said; the sort keeps rank order otherwise.
    chosen.sort(key=lambda hit: hit.kind == "turn")
    return chosen[:MAX_INJECTED]


@dataclass(frozen=True)
class Injection:
    text: str
    ids: list[str]  # the memories `text` holds, best first


def render_injection(
    hits: Sequence[RecallHit], budget: int, count: Callable[[str], int], terms: Collection[str] = ()
) -> Injection | None:
    """Ids, kinds and an excerpt of each, best first, within `budget` tokens, and how to get more; None for none.

    An excerpt is the lines of the memory that hold the prompt's `terms` (`text.excerpt`), at most
    `INJECTED_TEXT_TOKENS`: what it was injected for, not its first lines (a gist's header, a turn's preamble).
    Each sits inside its own `<memory>` record, escaped so that no text can close it: stored text is handed over
    as a record of the project, never as instructions."""
    if not hits or budget <= 0:
        return None
    head = "Memories from the project ledger that may bear on this prompt, as records:"
    foot = "Full text: the ledger's `recall` tool with ids=[...]; it also searches for more."
    lines: list[str] = []
    ids: list[str] = []
    for hit in hits:
        shown = " ".join(excerpt(hit.text, terms, count, INJECTED_TEXT_TOKENS).split())
        fields = " ".join(attribute(*pair) for pair in (("id", hit.id), ("kind", hit.kind), ("created", hit.created_at[:10])))
        line = f"- <memory {fields}>{defang(shown)}</memory>"
        if count("\n".join([head, *lines, line, foot])) > budget:
            break
        lines.append(line)
        ids.append(hit.id)
    return Injection("\n".join([head, *lines, foot]), ids) if lines else None
