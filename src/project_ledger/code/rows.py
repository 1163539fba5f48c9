"""A parsed file as the rows the store inserts, and the hashes those rows carry.

Kept apart from `store.py` (which needs the journal, and through it pydantic) so
that a parse worker process imports only this, the grammars and the extraction.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from project_ledger.code.symbol_text import heading, without_signature
from project_ledger.code.symbols import Definition, References
from project_ledger.text.redaction import may_hold_secret
from project_ledger.text.redaction import redact as redact_secrets

EMBED_TEXT_CHARS = 600


@dataclass(frozen=True)
class FileRecord:
    path: str
    language: str
    size: int
    mtime_ns: int
    hash: str
    lines: int


def embed_text(kind: str, qualname: str, signature: str, doc: str, body_head: str, path: str) -> str:
    """What the model reads for a symbol: short, since embedding is the expensive part. Its first line is
    `symbol_text.heading`; changing this text needs `symbol_text.TEXT_VERSION` bumped."""
    parts = [heading(kind, qualname, path), signature, doc[:300], without_signature(signature, body_head)]
    return "\n".join(part for part in parts if part)[:EMBED_TEXT_CHARS]


def embed_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def content_digest(source: bytes) -> str:
    return hashlib.blake2b(source, digest_size=16).hexdigest()


SymbolRow = tuple[str, str, str, int, int, str, str, str, str, str, str]
ReferenceRow = tuple[str, str, str, int]  # name, kind, lines ("3,17,42"), uses: a `References` as a plain tuple


@dataclass(frozen=True)
class ParsedFile:
    """A parsed file as rows ready to insert: built in the parsing process, so the one writing
    process only inserts (plain tuples also cross the process boundary far faster than objects)."""

    record: FileRecord
    symbols: list[SymbolRow]  # name, qualname, kind, start, end, signature, doc, parent, content hash, body head, embed hash
    references: list[ReferenceRow]

    @classmethod
    def build(cls, record: FileRecord, definitions: list[Definition], references: list[References], redact: bool) -> ParsedFile:
        """The rows for one parsed file; with `redact`, secrets in signatures, docstrings and body heads are replaced.

        A symbol's three texts are checked for anything a secret could start with in one pass over them joined:
        a hint in any of them is in the joined text too, so only symbols that may hold one are redacted."""
        symbols = []
        for d in definitions:
            signature, doc, body_head = d.signature, d.doc, d.body_head
            if redact and may_hold_secret(f"{signature}\n{doc}\n{body_head}"):
                signature, doc, body_head = (
                    redact_secrets(signature).text,
                    redact_secrets(doc).text,
                    redact_secrets(body_head).text,
                )
            text = embed_text(d.kind, d.qualname, signature, doc, body_head, record.path)
            symbols.append(
                (d.name, d.qualname, d.kind, d.line, d.end_line, signature, doc, d.parent, d.content_hash, body_head,
                 embed_hash(text))
            )  # fmt: skip
        # Plain tuples: the rows cross from a worker process, and unpickling a named tuple calls its class per row.
        return cls(record, symbols, [(name, kind, lines, uses) for name, kind, lines, uses in references])
