"""Reading the ledger as a person does: pages of memories (the web inspector), one memory in full, what a forget
would erase, the memories whose code changed, and the export.

Nothing here is on the write path: the only thing written is a code anchor's first-seen hash, which a memory
stored before its target was indexed gets when its anchors are next compared (`CodeAnchors.changes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial

from project_ledger.code.links import CodeAnchors, describe
from project_ledger.errors import InvalidArgument
from project_ledger.memory.validation import Limits, Validator
from project_ledger.models import (
    Direction,
    ForgetPreview,
    ListedMemory,
    MemoryDetail,
    MemoryLink,
    MemoryPage,
    Relation,
    StaleMemory,
)
from project_ledger.storage.backup import FORMAT, VERSION, ExportHeader, TextSink, write_export
from project_ledger.storage.journal import Anchor, Journal, utc_now

MAX_STALE_LISTED = 50


class MemoryBrowser:
    def __init__(self, *, journal: Journal, anchors: CodeAnchors, limits: Limits) -> None:
        self.journal = journal
        self.anchors = anchors
        self.limits = limits
        self.validate = Validator(limits)

    def browse(
        self,
        *,
        kind: str | None = None,
        tag: str | None = None,
        session: str | None = None,
        pinned: bool = False,
        superseded: bool = False,
        stale: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> MemoryPage:
        """Live memories, newest first, filtered by each condition given; `pinned`, `superseded` and `stale`
        keep only those. Each is marked stale when code it is anchored to changed."""
        if not 1 <= limit <= self.limits.max_k:
            raise InvalidArgument(f"limit={limit} is out of range: give 1 to {self.limits.max_k}")
        if offset < 0:
            raise InvalidArgument(f"offset={offset} is negative; give 0 or more")
        changed = set(self._anchor_changes(self.journal.anchors())) if stale else None
        memories, total = self.journal.browse(
            kind=self.validate.kind(kind) if kind else None,
            tag=self.validate.label(tag, "tag"),
            session=self.validate.label(session, "session"),
            pinned=pinned,
            superseded=superseded,
            ids=sorted(changed) if changed is not None else None,
            limit=limit,
            offset=offset,
        )
        if changed is None:
            changed = set(self._anchor_changes(self.journal.anchors([m.id for m in memories])))
        tags, sessions = self.journal.labels()
        return MemoryPage(
            memories=[ListedMemory(**m.model_dump(), stale=m.id in changed) for m in memories],
            total=total, offset=offset, limit=limit, tags=tags, sessions=sessions,
        )  # fmt: skip

    def stale_memories(self) -> list[StaleMemory]:
        changes = self._anchor_changes(self.journal.anchors())
        return [StaleMemory(id=memory_id, changed=changed) for memory_id, changed in changes.items()][:MAX_STALE_LISTED]

    def _anchor_changes(self, anchors: Mapping[str, list[Anchor]]) -> dict[str, list[str]]:
        """What changed in each of these memories' anchored code since it was stored; unchanged ones left out."""
        changes = {memory_id: self.anchors.changes(found, partial(self.journal.settle_anchor, memory_id)) for memory_id, found in anchors.items()}
        return {memory_id: changed for memory_id, changed in changes.items() if changed}

    def memory_detail(self, memory_id: str) -> MemoryDetail:
        """One memory (a forgotten one shows as its tombstone), its supersession chain, code links and relations."""
        memory = self.journal.get(self.validate.label(memory_id, "id") or memory_id)
        settle = partial(self.journal.settle_anchor, memory.id)
        links = [
            MemoryLink(
                target=anchor.target, name=anchor.name if anchor.target == "symbol" else None,
                description=describe(anchor), changed=next(iter(self.anchors.changes([anchor], settle)), None),
            )
            for anchor in self.journal.anchors([memory.id]).get(memory.id, [])
        ]
        return MemoryDetail(
            memory=memory,
            history=self.journal.history(memory.id),
            links=links,
            relations=related(self.journal.relations(memory.id)),
        )

    def forget_preview(self, memory_id: str) -> ForgetPreview:
        """What `forget` would erase, for a confirmation that shows it; `MemoryNotFound` for an unknown id."""
        memory = self.journal.get(self.validate.label(memory_id, "id") or memory_id)
        return ForgetPreview(memory=memory, also=self.journal.derived(memory.id) if memory.deleted_at is None else [])

    def export(self, out: TextSink) -> ExportHeader:
        """Write every memory, tombstones included, as JSON lines (see `backup`)."""
        memories = self.journal.dump()
        tombstones = sum(memory.deleted_at is not None for memory in memories)
        header = ExportHeader(
            format=FORMAT,
            version=VERSION,
            exported_at=utc_now(),
            journal_id=self.journal.journal_id(),
            memories=len(memories) - tombstones,
            tombstones=tombstones,
        )
        write_export(header, memories, out)
        return header


def related(relations: Iterable[tuple[str, str, Direction]]) -> list[Relation]:
    """One entry per other memory and direction, its relations joined ("cites and covers" from one gist)."""
    grouped: dict[tuple[str, Direction], list[str]] = {}
    for relation, other, direction in relations:
        grouped.setdefault((other, direction), []).append(relation)
    return [Relation(relation=" and ".join(names), id=other, direction=d) for (other, d), names in grouped.items()]
