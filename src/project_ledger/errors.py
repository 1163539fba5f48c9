"""Domain errors. Each message says what the caller can do next.

The ledger raises these; the MCP layer turns them into tool errors (`is_error`)
and the CLI into one-line messages.
"""


class LedgerError(Exception):
    """Base class for every error the ledger reports to a caller."""


class InvalidArgument(LedgerError):
    """The caller passed something the ledger cannot accept; fixing the call fixes it."""


class MemoryNotFound(LedgerError):
    def __init__(self, memory_id: str) -> None:
        super().__init__(f"no memory with id {memory_id!r}; use recall to find the id you mean")
        self.memory_id = memory_id


class MemoryForgotten(LedgerError):
    def __init__(self, memory_id: str) -> None:
        super().__init__(f"memory {memory_id!r} was forgotten; its text is gone and it cannot be changed")
        self.memory_id = memory_id


class IndexUnavailable(LedgerError):
    """The search index could not be opened; the journal is intact."""


class StorageError(LedgerError):
    """The journal could not be read or written (disk full, read-only, locked)."""


class JournalDamaged(StorageError):
    """The journal file is damaged: what was stored in its damaged parts may be lost (`doctor` says what to do)."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause  # SQLite's own words: "database disk image is malformed"
