"""The ledger service: remember, recall, pin, forget, status and the session-start pack.

It knows nothing of MCP or the CLI; both call these methods (the MCP tools from
a worker thread, since everything here is synchronous). The journal is written
first and is the truth; the index follows it through `IndexSync`.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import metadata

from project_ledger.indexers.search_index import FusionParams, SearchFilter, fuse

from .code_service import CodeService
from .config import ProjectPaths
from .errors import InvalidArgument, StorageError
from .index_sync import IndexSync
from .journal import Journal
from .models import (
    KINDS,
    Ack,
    EmbeddingStatus,
    IndexStatus,
    Memory,
    RecallHit,
    RecallResult,
    RememberResult,
    SessionStart,
    Status,
)
from .session_start import PackCache, ProjectContextFile, build_session_start, missing_context_text, render_pinned
from .tokens import TokenCounter

log = logging.getLogger(__name__)

MAX_K = 100
MAX_TAGS = 32
MAX_LINKS = 100  # files and symbols a memory may name
MAX_LABEL_CHARS = 200  # tags, session, role, file and symbol names
MODEL_WAIT_SECONDS = 5.0
_RELATIVE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class Limits:
    max_text_bytes: int
    instructions_tokens: int


def version() -> str:
    try:
        return metadata.version("project-ledger")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def render_hit(hit: RecallHit) -> str:
    """The compact form a model reads: one header line, then the text verbatim."""
    flags = "".join([" pinned" if hit.pinned else "", f" superseded-by={hit.superseded_by}" if hit.superseded_by else ""])
    tags = f" tags={','.join(hit.tags)}" if hit.tags else ""
    session = f" session={hit.session}" if hit.session else ""
    return f"[{hit.id} {hit.kind} {hit.created_at[:10]}{session}{tags}{flags}]\n{hit.text}"


def parse_since(value: str) -> float:
    """An ISO date or datetime, or a relative age such as `30m`, `12h`, `2d`, `1w`; returns epoch seconds."""
    relative = _RELATIVE.match(value)
    if relative:
        try:
            return (datetime.now(UTC) - timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})).timestamp()
        except OverflowError:
            raise InvalidArgument(f"since={value!r} reaches back past year 1; use a smaller age or an ISO date") from None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(
            f"since={value!r} is not a date: use ISO 8601 (2026-11-30 or 2026-11-30T09:00:00Z) or an age like 2d, 12h, 1w"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


class LedgerService:
    def __init__(
        self,
        paths: ProjectPaths,
        journal: Journal,
        sync: IndexSync,
        limits: Limits,
        tokens: TokenCounter,
        code: CodeService | None,
    ) -> None:
        self.paths = paths
        self.journal = journal
        self.sync = sync
        self.limits = limits
        self.fusion = FusionParams()
        self.tokens = tokens
        self.code = code
        self.project_context = ProjectContextFile(paths.project_context)
        self.pack_cache = PackCache(paths.data_dir / "session_start.json")

    def start(self) -> None:
        """Background start-up for a long-running server: the index and model, and the tokenizer's
        half-second load, all kept off the first request."""
        self.sync.start()
        if self.code is not None:
            self.code.start()
        threading.Thread(target=self.tokens.count, args=("warm up",), name="ledger-tokens", daemon=True).start()

    def close(self) -> None:
        if self.code is not None:
            self.code.close()
        self.sync.stop()
        self.journal.close()

    def require_code(self) -> CodeService:
        if self.code is None:
            raise InvalidArgument("the code index is turned off (LEDGER_CODE_INDEX=false)")
        return self.code

    # -- validation --------------------------------------------------------------

    def _text(self, text: str, what: str = "text") -> str:
        if not text or not text.strip():
            raise InvalidArgument(f"{what} is empty: pass the words to store or search for")
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidArgument(f"{what} holds an unpaired UTF-16 surrogate; send valid Unicode") from None
        if size > self.limits.max_text_bytes:
            raise InvalidArgument(
                f"{what} is {size} bytes; the limit is {self.limits.max_text_bytes} (LEDGER_MAX_TEXT_BYTES). "
                "Store the essential part, or split it into several memories."
            )
        return text

    @staticmethod
    def _kind(kind: str) -> str:
        if kind not in KINDS:
            raise InvalidArgument(f"kind={kind!r} is not one of {', '.join(KINDS)}")
        return kind

    @staticmethod
    def _labels(values: list[str], what: str, limit: int | None = None) -> list[str]:
        if limit is not None and len(values) > limit:
            raise InvalidArgument(f"{len(values)} {what} given; at most {limit} are kept per memory")
        cleaned = []
        for value in values:
            if not value.strip():
                raise InvalidArgument(f"{what} may not contain empty strings")
            if len(value) > MAX_LABEL_CHARS:
                raise InvalidArgument(f"each of {what} must be at most {MAX_LABEL_CHARS} characters")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidArgument(f"{what} holds an unpaired UTF-16 surrogate; send valid Unicode") from None
            if value not in cleaned:
                cleaned.append(value)
        return cleaned

    def _label(self, value: str | None, what: str) -> str | None:
        return None if value is None else self._labels([value], what)[0]

    # -- writes ----------------------------------------------------------------

    def remember(
        self,
        text: str,
        kind: str = "note",
        tags: list[str] | None = None,
        session: str | None = None,
        role: str | None = None,
        files: list[str] | None = None,
        symbols: list[str] | None = None,
        pinned: bool = False,
        supersedes: str | None = None,
    ) -> RememberResult:
        memory_id, created = self.journal.insert(
            text=self._text(text),
            kind=self._kind(kind),
            tags=self._labels(tags or [], "tags", MAX_TAGS),
            session=self._label(session, "session"),
            role=self._label(role, "role"),
            files=self._labels(files or [], "files", MAX_LINKS),
            symbols=self._labels(symbols or [], "symbols", MAX_LINKS),
            pinned=pinned,
            supersedes=supersedes,
        )
        if created:
            self.sync.kick()
        return RememberResult(id=memory_id, created=created, duplicate_of=None if created else memory_id)

    def pin(self, memory_id: str) -> Ack:
        self.journal.set_pinned(memory_id, True)
        self.sync.kick()
        return Ack(id=memory_id, ok=True)

    def unpin(self, memory_id: str) -> Ack:
        self.journal.set_pinned(memory_id, False)
        self.sync.kick()
        return Ack(id=memory_id, ok=True)

    def forget(self, memory_id: str) -> Ack:
        """Scrub the journal row; searches skip it from then on, and the index drops it at its next catch-up.

        The session-start cache may quote a pinned text, so it goes too.
        """
        self.journal.forget(memory_id)
        self.pack_cache.clear()
        self.sync.kick()
        return Ack(id=memory_id, ok=True)

    # -- recall ----------------------------------------------------------------

    def recall(
        self,
        query: str,
        k: int = 8,
        kinds: list[str] | None = None,
        tags: list[str] | None = None,
        session: str | None = None,
        since: str | None = None,
        include_superseded: bool = False,
        token_budget: int | None = None,
    ) -> RecallResult:
        query = self._text(query, "query")
        if not 1 <= k <= MAX_K:
            raise InvalidArgument(f"k={k} is out of range: ask for 1 to {MAX_K} results")
        if token_budget is not None and token_budget < 1:
            raise InvalidArgument("token_budget must be a positive number of tokens")
        where = SearchFilter(
            kinds=[self._kind(kind) for kind in kinds] if kinds else None,
            tags=self._labels(tags, "tags") if tags else None,
            session=self._label(session, "session"),
            since=parse_since(since) if since else None,
            include_superseded=include_superseded,
        )
        self.sync.index()  # fails fast, with the reason, if the index could not open
        embedder = self.sync.embedder
        notes: list[str] = []
        dense: list[float] | None = None
        if embedder.state in ("not-loaded", "loading"):
            self.sync.wait_for_model(MODEL_WAIT_SECONDS)
        if embedder.state == "ready":
            dense = embedder.embed_query(query).tolist()
        else:
            notes.append(f"BM25 only: the embedding model is {embedder.state}" + (f" ({embedder.detail})" if embedder.detail else ""))
        found = self.sync.candidates(query, dense, where, max(self.fusion.candidates, k))
        hits = fuse(found, self.fusion, k)
        memories = self.journal.get_by_seqs([hit.seq for hit in hits])
        ranked = [(hit.seq, _hit(m, hit.score)) for hit in hits if (m := memories.get(hit.seq)) is not None]
        kept, left_out = self._fit([r for _, r in ranked], token_budget)
        if left_out:
            notes.append(f"left out to fit token_budget={token_budget}: {', '.join(left_out)}")
        kept_ids = {r.id for r in kept}
        try:
            self.journal.touch([seq for seq, r in ranked if r.id in kept_ids])
        except StorageError as exc:  # access stats are not worth failing a read for
            log.warning("access stats not recorded: %s", exc)
        return RecallResult(
            results=kept,
            tokens=self.tokens.count(render_results(kept)),
            mode="hybrid" if dense is not None else "bm25-only",
            note="; ".join(notes) or None,
        )

    def _fit(self, results: list[RecallHit], budget: int | None) -> tuple[list[RecallHit], list[str]]:
        """Keep results in rank order while they fit; one that does not is skipped whole, never cut."""
        if budget is None:
            return results, []
        kept: list[RecallHit] = []
        used = 0
        for hit in results:
            cost = self.tokens.count(render_hit(hit)) + (1 if kept else 0)  # "\n\n" between items is one token
            if used + cost <= budget:
                kept.append(hit)
                used += cost
        while kept and not self.tokens.fits(render_results(kept), budget):  # the sum is an estimate: confirm
            kept.pop()
        kept_ids = {hit.id for hit in kept}
        return kept, [hit.id for hit in results if hit.id not in kept_ids]

    # -- session start, resources, status --------------------------------------

    def session_start(self) -> SessionStart:
        return build_session_start(
            self.project_context.read(),
            self.paths.project_context,
            self.journal.pinned(),
            self.limits.instructions_tokens,
            self.tokens,
            self.pack_cache,
        )

    def project_context_text(self) -> str:
        return self.project_context.read() or missing_context_text(self.paths.project_context)

    def pinned_text(self) -> str:
        return render_pinned(self.journal.pinned()) or "No pinned memories. Pin one with the `pin` tool."

    def reindex(self) -> int:
        return self.sync.rebuild()

    def status(self) -> Status:
        counts = self.journal.counts()
        journal_rev = self.journal.rev()
        embedder = self.sync.embedder
        state: str = self.sync.state()
        index = self.sync.index(timeout=0) if state == "ready" else None
        figures = self.sync.figures(timeout=2.0) if index else (0, 0)
        if figures is None:  # a rebuild holds the index; report what is known without waiting for it
            state, figures = "busy", (0, 0)
        indexed_rev, points = figures
        return Status(
            version=version(),
            root=str(self.paths.root),
            data_dir=str(self.paths.data_dir),
            journal=str(self.journal.path),
            counts=counts.by_kind,
            pinned=counts.pinned,
            superseded=counts.superseded,
            forgotten=counts.forgotten,
            project_context=str(self.paths.project_context) if self.paths.project_context.exists() else None,
            session_start_cut=self.session_start().truncated,
            index=IndexStatus(
                backend=index.backend if index else "unknown",
                location=index.location if index else str(self.paths.index_dir),
                state=state,
                indexed_rev=indexed_rev,
                journal_rev=journal_rev,
                lag=max(journal_rev - indexed_rev, 0) if state != "busy" else 0,
                points=points,
                missing_embeddings=self.journal.count_missing_embeddings(embedder.identity),
                events=[*self.sync.events, *([f"open failed: {self.sync.open_error}"] if self.sync.open_error else [])],
                compaction=self.sync.compaction_state(),
            ),
            embedding=EmbeddingStatus(model=embedder.identity, state=embedder.state, detail=embedder.detail),
            code=self.code.status() if self.code is not None else None,
        )


_HIT_FIELDS = set(RecallHit.model_fields) - {"score"}


def _hit(memory: Memory, score: float) -> RecallHit:
    return RecallHit(**memory.model_dump(include=_HIT_FIELDS), score=round(score, 6))


def render_results(results: list[RecallHit]) -> str:
    return "\n\n".join(render_hit(hit) for hit in results)
