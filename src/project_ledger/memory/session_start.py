"""The session-start pack: the context without a query, capped for the server's instructions, cached on disk across
starts.

It is the project context file, the pins and the newest session gist (what happened last time rides into the next
session), within `LEDGER_INSTRUCTIONS_TOKENS`. The server builds it before it answers the MCP handshake, so a pack
that is cached, or that fits the cap by its byte length, is handed out without loading the token encoding. A forget
discards the cached packs, the server's and the one a hook kept (`start_pack`): they may quote what was forgotten.
"""

from __future__ import annotations

from pathlib import Path

from project_ledger.memory.context_pack import Pack, PackCache, PackSection, assemble, cache_key
from project_ledger.memory.context_sections import query_sections, stable_sections
from project_ledger.memory.project_context import ProjectContextFile
from project_ledger.memory.session_gists import SessionGists
from project_ledger.start_pack import discard as discard_kept_start
from project_ledger.storage.journal import Journal
from project_ledger.text.tokens import TokenBound, TokenCounter

CACHE_FILE = "session_start.json"  # in the data directory


class SessionStartPack:
    def __init__(
        self,
        *,
        journal: Journal,
        project_context: ProjectContextFile,
        gists: SessionGists,
        tokens: TokenCounter,
        cap: int,
        data_dir: Path,
    ) -> None:
        self.journal = journal
        self.project_context = project_context
        self.gists = gists
        self.tokens = tokens
        self.cap = cap
        self.data_dir = data_dir
        self.cache = PackCache(data_dir / CACHE_FILE)

    def pack(self) -> Pack:
        """The pack, from the cache or assembled (and then cached)."""
        forgets = self.journal.forget_count()
        return self._pack(self._sections(), forgets)

    def text(self) -> str:
        """The pack's text: the server's instructions, built before the MCP handshake is answered."""
        return self._outline()[0]

    def cut(self) -> bool:
        """Whether the pack leaves something out (`status` says so)."""
        return self._outline()[1]

    def discard(self) -> None:
        """Drop the kept packs, the server's and the hook's: something they may quote was forgotten."""
        self.cache.clear()
        discard_kept_start(self.data_dir)

    def _outline(self) -> tuple[str, bool]:
        """The pack's text and whether it is cut, without its token counts. A pack not cached yet (a new
        project; a pin, a gist or the context file changed) is not assembled with the encoding when its byte length
        fits the cap: it is then all its sections, the text `pack` gives, and loading the encoding costs a
        tenth of a second or more (on the way to the `initialize` answer; more than the rest of `status`)."""
        forgets = self.journal.forget_count()
        sections = self._sections()
        key = cache_key(sections, self.cap)
        if (cached := self.cache.get(key)) is not None:
            return cached.text, cached.truncated
        if not (bound := assemble(sections, self.cap, TokenBound())).truncated:
            return bound.text, False  # it fits by a count never below the encoding's, so nothing is cut
        pack = self._assembled(sections, key, forgets)
        return pack.text, pack.truncated

    def _pack(self, sections: list[PackSection], forgets: int) -> Pack:
        """The pack of `sections`, from the cache or assembled and cached."""
        key = cache_key(sections, self.cap)
        if (cached := self.cache.get(key)) is not None:
            return cached
        return self._assembled(sections, key, forgets)

    def _assembled(self, sections: list[PackSection], key: str, forgets: int) -> Pack:
        """The pack of `sections` assembled, and cached under `key` unless something was forgotten since `forgets` was
        read (a forget meanwhile may have erased text this pack quotes)."""
        pack = assemble(sections, self.cap, self.tokens)
        if self.journal.forget_count() == forgets:
            self.cache.put(key, pack)
        return pack

    def _sections(self) -> list[PackSection]:
        sections = stable_sections(self.project_context.read(), self.project_context.path, self.journal.pinned())
        return sections + query_sections("", self.gists.for_context(None), [], [], [], None)
