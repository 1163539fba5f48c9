"""Session gists in the journal: writing one (through the client's model or extractively), rolling it
forward as the session grows, and keeping long sessions compact in the background.

A gist is a memory of kind `summary` tagged `gist` and its method. It is linked
to every turn it covers and every memory it cites (`memory_sources`), so
forgetting any of them forgets the gist too. A new gist of a session supersedes
the previous one, which stays as history.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from project_ledger.errors import InvalidArgument, LedgerError, MemoryForgotten, StorageError
from project_ledger.memory import gist_sampling
from project_ledger.memory.gist import Material, extractive, fit, header, origin
from project_ledger.memory.gist_sampling import SamplingFailed, Writer
from project_ledger.models import GistMethod, GistResult, GistStatus, Memory
from project_ledger.storage.journal import Journal
from project_ledger.text.tokens import TokenCounter
from project_ledger.worker import RunAgain, Worker

log = logging.getLogger(__name__)

MIN_GIST_TOKENS = 100
MAX_GIST_TOKENS = 8000


class _AlreadyCurrent(Exception):
    """A background gist found the session's gist already covering every turn it would."""


@dataclass(frozen=True)
class GistParams:
    chunk_tokens: int = 6000  # largest sampling request
    max_requests: int = 12  # per gist
    compact_turns: int = 60  # a session this long gets a gist kept current in the background
    background_tokens: int = 600


class SessionGists:
    def __init__(self, journal: Journal, tokens: TokenCounter, params: GistParams, changed: Callable[[], None]) -> None:
        self.journal = journal
        self.tokens = tokens
        self.params = params
        self._changed = changed  # tells the index to catch up
        self._write_lock = threading.Lock()  # one gist at a time: each supersedes the one before
        # Sessions waiting for a background gist, oldest first; one leaves only once its gist is written.
        self._queued: dict[str, None] = {}
        self._queue_lock = threading.Lock()
        # Started with the first long session. Closing finishes what is queued: a CLI call that just
        # crossed the threshold still leaves its gist behind.
        self._worker = Worker("ledger-gists", [self._gist_next], poll_seconds=None, drain=True)

    def material(self, session: str) -> Material:
        memories = self.journal.session_memories(session)
        turns = [m for m in memories if m.kind == "turn"]
        typed = [m for m in memories if m.kind not in ("turn", "summary")]
        captured = self.journal.sources([m.id for m in typed], ["captured"])
        return Material(session, turns, typed, {child: parents[0] for child, parents in captured.items()})

    def summarize(
        self, session: str, max_tokens: int = 600, writer: Writer | None = None, why_not: str | None = None
    ) -> GistResult:
        """Write the session's gist and store it, superseding the previous one.

        With a `writer`, the client's model writes it; if that fails, or every
        bullet it wrote fails validation, the extractive gist is stored instead
        and `note` says why. `why_not` explains a missing writer. If a memory of
        the session is forgotten while the gist is being written, it is written
        again from what is left (once; the second time the error stands).
        """
        if not MIN_GIST_TOKENS <= max_tokens <= MAX_GIST_TOKENS:
            raise InvalidArgument(f"max_tokens={max_tokens} is out of range: give {MIN_GIST_TOKENS} to {MAX_GIST_TOKENS}")
        try:
            return self._summarize(session, max_tokens, writer, why_not)
        except MemoryForgotten:
            return self._summarize(session, max_tokens, writer, why_not)

    def _summarize(
        self, session: str, max_tokens: int, writer: Writer | None, why_not: str | None, background: bool = False
    ) -> GistResult:
        material = self.material(session)
        if not material.turns and not material.memories:
            raise InvalidArgument(
                f"session {session!r} has no memories to summarise; remember its turns under it first (the remember tool's "
                f"session argument, or `project-ledger remember TEXT --kind turn --session {session}`)"
            )
        method: GistMethod = "extractive"
        note, dropped, requests = why_not, Counter[str](), 0
        bullets = extractive(material)
        if writer is not None:
            try:
                sampled = gist_sampling.write(material, writer, max_tokens, self.params.chunk_tokens, self.params.max_requests, self.tokens)
                dropped, requests = sampled.dropped, sampled.requests
                if sampled.bullets:
                    method, bullets = "sampling", sampled.bullets
                else:
                    note = f"the client's model wrote no valid bullet ({sum(dropped.values())} dropped); the gist is extractive"
            except SamplingFailed as exc:
                dropped, requests = exc.dropped, exc.requests
                note = f"sampling failed ({exc}); the gist is extractive"
        kept, left_out, text = fit(header(material, method), bullets, max_tokens, self.tokens, session)
        cited = list(dict.fromkeys(source for bullet in kept for source in bullet.sources))
        cited += [turn for turn in self._turns_behind(material, cited) if turn not in cited]
        # `covers` every memory the writer saw (a model may paraphrase one it does not cite): forgetting any of them
        # forgets the gist.
        covered = [m.id for m in (*material.turns, *material.memories)]
        with self._write_lock:
            current = next(iter(self.journal.gists(session)), None)
            if background and current is not None and self.journal.covered_turns(current.id) >= len(material.turns):
                raise _AlreadyCurrent(current.id)  # a gist at least as new was written meanwhile
            gist_id, created = self.journal.insert(
                text=text, kind="summary", tags=["gist", method], session=session, role=None, files=[], symbols=[],
                pinned=False, supersedes=None, replaces_gist=True,
                sources=[*((i, "covers") for i in covered), *((i, "cites") for i in cited)],
            )  # fmt: skip
        chain = self.journal.history(gist_id) if created else []
        if created:
            self._changed()
        return GistResult(
            id=gist_id, session=session, text=text, tokens=self.tokens.count(text), method=method, bullets=len(kept),
            left_out=left_out, dropped=sum(dropped.values()), dropped_reasons=dict(dropped), requests=requests,
            covers=len(material.turns), supersedes=chain[-2].id if len(chain) > 1 else None, created=created, note=note,
        )  # fmt: skip

    @staticmethod
    def _turns_behind(material: Material, cited: list[str]) -> list[str]:
        """The turns the cited memories were captured or recorded from, so `recall(expand=true)` reaches them."""
        memories = {m.id: m for m in material.memories}
        turns = (material.captured_from.get(i) or origin(memories[i], material.turns) for i in cited if i in memories)
        return list(dict.fromkeys(t for t in turns if t))

    # -- long sessions -------------------------------------------------------------

    def is_long(self, session: str) -> bool:
        return self.journal.session_turn_count(session) >= self.params.compact_turns

    def turn_added(self, session: str) -> None:
        """A long session's gist is rewritten (extractively, off the request path) every half `compact_turns`
        new turns, so `context` can lean on it instead of the raw recent turns."""
        turns = self.journal.session_turn_count(session)
        if turns < self.params.compact_turns:
            return
        current = next(iter(self.journal.gists(session)), None)
        covered = self.journal.covered_turns(current.id) if current else 0
        if turns - covered < max(self.params.compact_turns // 2, 1):
            return
        with self._queue_lock:
            if session in self._queued:
                return
            self._queued[session] = None
        self._worker.start()
        self._worker.wake()

    def _gist_next(self) -> RunAgain | None:
        """Write the oldest queued session's gist; with more queued, the next round follows at once."""
        with self._queue_lock:
            session = next(iter(self._queued), None)
        if session is None:
            return None
        try:
            self._summarize(session, self.params.background_tokens, None, None, background=True)
        except _AlreadyCurrent:
            pass
        except StorageError:  # a full or read-only disk: the worker pauses and says so, once
            raise
        except LedgerError as exc:
            log.warning("background gist of session %s failed: %s", session, exc)
        except Exception as exc:  # the worker logs it and carries on with the next session
            exc.add_note(f"background gist of session {session}")
            raise
        finally:  # only now: turns that arrive meanwhile must not queue a second gist of what this one covers
            with self._queue_lock:
                del self._queued[session]
        with self._queue_lock:
            return RunAgain() if self._queued else None

    def close(self) -> None:
        self._worker.stop(timeout=5)

    # -- reading -------------------------------------------------------------------

    def for_context(self, session: str | None) -> list[Memory]:
        """The newest gist of this session, then the newest of another session (the previous one worked on)."""
        own = self.journal.gists(session) if session is not None else []
        other = next((g for g in self.journal.gists(None, limit=4) if g.session != session), None)
        return [*own, *([other] if other else [])]

    def uncovered_turns(self, session: str) -> int | None:
        """Turns of a session newer than its gist; None without a gist."""
        current = next(iter(self.journal.gists(session)), None)
        return self.journal.session_turn_count(session) - self.journal.covered_turns(current.id) if current else None

    def status(self) -> GistStatus:
        newest = next(iter(self.journal.gists(None)), None)
        last = f"{newest.id} (session {newest.session}, {newest.tags[1] if len(newest.tags) > 1 else 'unknown'})" if newest else None
        return GistStatus(by_method=self.journal.gist_methods(), last=last)

