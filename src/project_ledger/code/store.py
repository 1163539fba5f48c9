"""The code-symbol tables in the journal database: files as last parsed, definitions, references.

The store has its own connections, apart from the memories': one for writing,
with `synchronous = NORMAL` (this data is derived from the source tree and can
be re-parsed, so it does not pay for a flush per commit) and one for reading,
so a query never waits behind a long indexing batch.

Each batch of files takes one value of the `code_rev` counter inside its
transaction: a search index follows symbols with `changes_since`, as it
follows memories.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from project_ledger.code.naming import Spelling
from project_ledger.code.rows import FileRecord, ParsedFile, embed_hash, embed_text
from project_ledger.code.symbol_text import TEXT_VERSION
from project_ledger.storage.journal import WAIT_SECONDS, storage_error, utc_now

WRITE_CACHE_KIB = 64 * 1024
KEEP_REMOVALS_REVISIONS = 10_000
LOOKUP_PATHS = 500  # paths per query when a batch looks up its files' records (well under SQLite's variable limit)
# The code tables' secondary indexes, as the schema's migration 002 creates them (a test checks they agree).
INDEXES = {
    "code_symbols_path": "code_symbols(path)",
    "code_symbols_name": "code_symbols(name COLLATE NOCASE)",
    "code_symbols_qualname": "code_symbols(qualname)",
    "code_symbols_rev": "code_symbols(rev)",
    "code_symbols_embed": "code_symbols(embed_hash)",
    "code_refs_name": "code_refs(name)",
    "code_refs_path": "code_refs(path)",
}


@dataclass(frozen=True)
class StoredSymbol:
    id: int
    path: str
    name: str
    qualname: str
    kind: str
    language: str
    start_line: int
    end_line: int
    signature: str
    doc: str
    parent: str
    body_head: str

    def embed_text(self) -> str:
        return embed_text(self.kind, self.qualname, self.signature, self.doc, self.body_head, self.path)


@dataclass(frozen=True)
class StoredReference:
    name: str
    path: str
    line: int
    kind: str


@dataclass(frozen=True)
class SymbolChange:
    """A symbol to (re)index, with its dense vector if one is stored for the model."""

    symbol: StoredSymbol
    vector: bytes | None


@dataclass(frozen=True)
class CodeCounts:
    files: int
    symbols: int
    references: int
    languages: dict[str, int]  # files per language


_SYMBOL_COLUMNS = "id, path, name, qualname, kind, language, start_line, end_line, signature, doc, parent, body_head"


def _current_hash(row: sqlite3.Row) -> str:
    """The embed hash of a stored symbol's text as this version writes it (`TEXT_VERSION`)."""
    return embed_hash(_symbol(row).embed_text())


def _symbol(row: sqlite3.Row) -> StoredSymbol:
    return StoredSymbol(*(row[i] for i in range(12)))


class CodeStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        try:
            self._writer = self._connect()
            self._writer.execute("PRAGMA synchronous = NORMAL")
            self._writer.execute(f"PRAGMA cache_size = -{WRITE_CACHE_KIB}")  # a full index updates several indexes
            self._reader = self._connect()
        except sqlite3.Error as exc:
            raise storage_error(exc, path, "opened") from exc

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=WAIT_SECONDS)
        db.row_factory = sqlite3.Row
        db.execute(f"PRAGMA busy_timeout = {round(WAIT_SECONDS * 1000)}")
        return db

    def close(self) -> None:
        with self._write_lock, self._read_lock:
            self._writer.close()
            self._reader.close()

    def release_cache(self) -> None:
        """Hand back the writer's page cache, which a full index fills (up to `WRITE_CACHE_KIB`; 36 MB after django);
        later writes read back the few pages they touch."""
        with self._write_lock:
            self._writer.execute("PRAGMA shrink_memory")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            db = self._writer
            try:
                db.execute("BEGIN IMMEDIATE")
                yield db
                db.execute("COMMIT")
            except BaseException as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(exc, self.path) from exc
                raise

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        with self._read_lock:
            try:
                return self._reader.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "read") from exc

    # -- writing -------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        rows = self._read("SELECT path, language, size, mtime_ns, hash, lines FROM code_files")
        return {row["path"]: FileRecord(*row) for row in rows}

    def apply(self, parsed: Sequence[ParsedFile], touched: Sequence[FileRecord] = (), removed: Sequence[str] = ()) -> int:
        """Replace parsed files' symbols, refresh touched files' stat data, purge removed files, in one transaction.

        A parsed file whose stored hash already matches (another process got
        there first) only has its record refreshed. The first batch into an empty store records this version's
        `TEXT_VERSION`, so that nothing re-hashes what it just wrote (`refresh_texts`). Returns the revision taken.
        """
        now = utc_now()
        with self._write() as db:
            if db.execute("SELECT NOT EXISTS (SELECT 1 FROM code_symbols)").fetchone()[0]:  # this version's texts alone
                db.execute("INSERT OR IGNORE INTO counters (name, value) VALUES ('code_text', ?)", (TEXT_VERSION,))
            rev = _next_code_rev(db)
            db.execute("UPDATE counters SET value = value + 1 WHERE name = 'code_tree'")
            for path in removed:
                self._purge(db, path, rev)
                db.execute("DELETE FROM code_files WHERE path = ?", (path,))
            db.executemany(
                "UPDATE code_files SET size = ?, mtime_ns = ? WHERE path = ?", [(r.size, r.mtime_ns, r.path) for r in touched]
            )
            symbols: list[tuple[object, ...]] = []
            references: list[tuple[object, ...]] = []
            files: list[tuple[object, ...]] = []
            newest: dict[str, ParsedFile] = {}  # a path listed twice (a directory and a file in it) is written once
            for item in parsed:
                if (seen := newest.get(item.record.path)) is None or seen.record.mtime_ns <= item.record.mtime_ns:
                    newest[item.record.path] = item
            paths = list(newest)
            known: dict[str, tuple[str, int]] = {}
            for start in range(0, len(paths), LOOKUP_PATHS):
                chunk = paths[start : start + LOOKUP_PATHS]
                sql = f"SELECT path, hash, mtime_ns FROM code_files WHERE path IN ({','.join('?' * len(chunk))})"
                known.update((row[0], (row[1], row[2])) for row in db.execute(sql, chunk))
            for item in newest.values():
                record = item.record
                stored = known.get(record.path)
                if stored is not None and stored[1] > record.mtime_ns:
                    continue  # a newer version was parsed meanwhile (the watcher overtook a scan)
                if stored is None or stored[0] != record.hash:
                    if stored is not None:  # a file with no record has no rows: they are written and purged with it
                        self._purge(db, record.path, rev)
                    path, language = record.path, record.language
                    symbols += [(path, language, rev, *row) for row in item.symbols]
                    references += [(name, path, kind, lines, uses) for name, kind, lines, uses in item.references]
                files.append((record.path, record.language, record.size, record.mtime_ns, record.hash, record.lines, now))
            # One statement per table for the whole batch: the rows of a file never collide with another's.
            db.executemany(
                "INSERT INTO code_symbols (path, language, rev, name, qualname, kind, start_line, end_line, signature, doc, "
                "parent, content_hash, body_head, embed_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                symbols,
            )
            db.executemany("INSERT INTO code_refs (name, path, kind, lines, uses) VALUES (?, ?, ?, ?, ?)", references)
            db.executemany(
                "INSERT OR REPLACE INTO code_files (path, language, size, mtime_ns, hash, lines, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                files,
            )
        return rev

    def defer_indexes(self) -> None:
        """Drop the secondary indexes before a cold full index: building each once at the end (`restore_indexes`)
        costs about half the CPU of keeping them up to date row by row. Until then lookups scan the tables. A
        process that dies in between leaves them missing; the next scan's `restore_indexes` builds them."""
        with self._write() as db:
            for name in INDEXES:
                db.execute(f"DROP INDEX IF EXISTS {name}")

    def restore_indexes(self) -> None:
        """Create whichever of the secondary indexes is missing (none, unless a cold index was under way)."""
        present = {row[0] for row in self._read("SELECT name FROM sqlite_master WHERE type = 'index'")}
        if missing := [name for name in INDEXES if name not in present]:
            with self._write() as db:
                for name in missing:
                    db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {INDEXES[name]}")

    @staticmethod
    def _purge(db: sqlite3.Connection, path: str, rev: int) -> None:
        db.execute("INSERT INTO code_removed (rev, id) SELECT ?, id FROM code_symbols WHERE path = ?", (rev, path))
        db.execute("DELETE FROM code_symbols WHERE path = ?", (path,))
        db.execute("DELETE FROM code_refs WHERE path = ?", (path,))

    def prune(self) -> None:
        """Drop vectors no symbol uses any more (their code was edited or deleted), and removal records
        every live index has long passed. An index that lagged further (a slot idle for thousands of
        revisions) holds the wrong number of points when it next opens, and is rebuilt then."""
        with self._write() as db:
            db.execute("DELETE FROM code_vectors WHERE embed_hash NOT IN (SELECT embed_hash FROM code_symbols)")
            db.execute(
                "DELETE FROM code_removed WHERE rev < (SELECT value FROM counters WHERE name = 'code_rev') - ?",
                (KEEP_REMOVALS_REVISIONS,),
            )

    def refresh_texts(self) -> int:
        """Re-hash every symbol's text if the store was written under an earlier `TEXT_VERSION`; how many changed.

        A symbol's embed hash is computed when its file is parsed. Once the text changes (a new `embed_text`), a
        vector stored for the new text under its hash would never be found by the old one, so the symbol would be
        embedded again on every round. Re-hashed rows get no vector until embedded again in the background, and
        every row a new revision, so search indexes re-read them all (their BM25 terms too: a BM25 setting can
        change with the version). Two processes opening at once: the second finds the version set and does
        nothing; a process of an older version leaves a newer version's hashes alone."""
        if self.texts_current():  # a newer version's texts are not re-hashed back
            return 0
        with self._write() as db:
            row = db.execute("SELECT value FROM counters WHERE name = 'code_text'").fetchone()
            if row is not None and row[0] >= TEXT_VERSION:
                return 0
            rows = db.execute(f"SELECT {_SYMBOL_COLUMNS}, embed_hash FROM code_symbols").fetchall()
            hashes = [(_current_hash(row), row["id"], row["embed_hash"]) for row in rows]
            changed = [(new, symbol_id) for new, symbol_id, old in hashes if new != old]
            db.executemany("UPDATE code_symbols SET embed_hash = ? WHERE id = ?", changed)
            db.execute("UPDATE code_symbols SET rev = ?", (_next_code_rev(db),))  # every row: its BM25 terms may differ too
            db.execute("INSERT OR REPLACE INTO counters (name, value) VALUES ('code_text', ?)", (TEXT_VERSION,))
        return len(changed)

    def texts_current(self) -> bool:
        """Whether the symbols' hashes are those of this version's texts (else `refresh_texts` has work to do)."""
        version = self._read("SELECT value FROM counters WHERE name = 'code_text'")
        return bool(version) and version[0][0] >= TEXT_VERSION

    # -- the change feed a search index follows ---------------------------------

    def rev(self) -> int:
        return self._read("SELECT value FROM counters WHERE name = 'code_rev'")[0][0]

    def tree_rev(self) -> int:
        """Changes when any file's definitions or references change, and only then."""
        return self._read("SELECT value FROM counters WHERE name = 'code_tree'")[0][0]

    def rev_and_count(self) -> tuple[int, int]:
        row = self._read("SELECT (SELECT value FROM counters WHERE name = 'code_rev'), (SELECT COUNT(*) FROM code_symbols)")[0]
        return row[0], row[1]

    def changes_since(self, rev: int, model: str, revisions: int) -> tuple[list[SymbolChange], list[int], int]:
        """What the next few revisions after `rev` changed: symbols to upsert, ids to delete, and the revision
        reached. Whole revisions only, so a watermark never splits one. A revision that changed no symbol (a scan
        of a tree with no code, a file's stat data) is passed over: the revision reached is the store's own once
        no later change is left, else a watermark would stay behind it, and a lag above 0, until the next edit."""
        current = self.rev()  # read first: every revision up to it was committed with its rows
        revs = self._read(
            "SELECT rev FROM (SELECT rev FROM code_symbols WHERE rev > ? UNION SELECT rev FROM code_removed WHERE rev > ?) "
            "WHERE rev <= ? ORDER BY rev LIMIT ?",
            (rev, rev, current, revisions),
        )
        if not revs:
            return [], [], max(rev, current)
        top = current if len(revs) < revisions else revs[-1][0]
        columns = ", ".join("s." + column.strip() for column in _SYMBOL_COLUMNS.split(","))
        rows = self._read(
            f"SELECT {columns}, v.vector FROM code_symbols s "
            "LEFT JOIN code_vectors v ON v.embed_hash = s.embed_hash AND v.model = ? "
            "WHERE s.rev > ? AND s.rev <= ? ORDER BY s.rev, s.id",
            (model, rev, top),
        )
        removed = [row[0] for row in self._read("SELECT id FROM code_removed WHERE rev > ? AND rev <= ?", (rev, top))]
        return [SymbolChange(_symbol(row), row["vector"]) for row in rows], removed, top

    def missing_vectors(self, model: str, limit: int) -> list[StoredSymbol]:
        """Symbols whose text has no vector for `model` yet, one per distinct text."""
        rows = self._read(
            f"SELECT {_SYMBOL_COLUMNS} FROM code_symbols WHERE id IN (SELECT MIN(s.id) FROM code_symbols s "
            "LEFT JOIN code_vectors v ON v.embed_hash = s.embed_hash AND v.model = ? WHERE v.embed_hash IS NULL "
            "GROUP BY s.embed_hash LIMIT ?)",
            (model, limit),
        )
        return [_symbol(row) for row in rows]

    def count_missing_vectors(self, model: str) -> int:
        """Symbols without a vector for `model`, as they will be once `refresh_texts` has run: a store still under
        an earlier text version is counted by the hashes of the texts as they are now. Reads only, so that a status
        leaves the journal as it found it."""
        if self.texts_current():
            return self._read(
                "SELECT COUNT(*) FROM code_symbols s LEFT JOIN code_vectors v ON v.embed_hash = s.embed_hash AND v.model = ? "
                "WHERE v.embed_hash IS NULL",
                (model,),
            )[0][0]
        stored = {row[0] for row in self._read("SELECT embed_hash FROM code_vectors WHERE model = ?", (model,))}
        rows = self._read(f"SELECT {_SYMBOL_COLUMNS} FROM code_symbols")
        return sum(_current_hash(row) not in stored for row in rows)

    def store_vectors(self, model: str, vectors: Sequence[tuple[int, str, bytes]]) -> None:
        """Save vectors by text hash and move the symbols using them to a new revision, so indexes pick them up.

        Each vector comes with the symbol whose text was embedded, which takes that text's hash: a row another
        version of the ledger wrote (another `TEXT_VERSION`, a server not yet restarted after an upgrade) carries
        another hash, and would otherwise stay without a vector and be embedded again on every round."""
        with self._write() as db:
            rev = _next_code_rev(db)
            for symbol_id, text_hash, vector in vectors:
                db.execute(
                    "INSERT OR REPLACE INTO code_vectors (embed_hash, model, vector) VALUES (?, ?, ?)", (text_hash, model, vector)
                )
                db.execute("UPDATE code_symbols SET embed_hash = ? WHERE id = ?", (text_hash, symbol_id))
                db.execute("UPDATE code_symbols SET rev = ? WHERE embed_hash = ?", (rev, text_hash))  # that row too

    # -- queries ---------------------------------------------------------------

    def symbols(self, where: str, params: Sequence[object], limit: int) -> list[StoredSymbol]:
        rows = self._read(f"SELECT {_SYMBOL_COLUMNS} FROM code_symbols WHERE {where} ORDER BY path, start_line LIMIT ?", (*params, limit))
        return [_symbol(row) for row in rows]

    def count_symbols(self, where: str, params: Sequence[object]) -> int:
        return self._read(f"SELECT COUNT(*) FROM code_symbols WHERE {where}", params)[0][0]

    def symbols_by_ids(self, ids: Sequence[int]) -> dict[int, StoredSymbol]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {row["id"]: _symbol(row) for row in self._read(f"SELECT {_SYMBOL_COLUMNS} FROM code_symbols WHERE id IN ({marks})", ids)}

    def definition_sites(self, name: str, limit: int) -> list[tuple[str, str]]:
        """(path, qualname) of definitions whose name or qualified name (either separator) is `name`."""
        spellings = sorted({name, name.replace("::", "."), name.replace(".", "::")})
        marks = ",".join("?" * len(spellings))
        rows = self._read(
            f"SELECT DISTINCT path, qualname FROM code_symbols WHERE ({EXACT_NAME}) OR qualname IN ({marks}) "
            "ORDER BY path, qualname LIMIT ?",
            (name, name, *spellings, limit),
        )
        return [(row[0], row[1]) for row in rows]

    def symbol_digest(self, path: str, qualname: str) -> str | None:
        """The content hash of a definition (of all of them, for overloads); None when it is gone."""
        rows = self._read(
            "SELECT content_hash FROM code_symbols WHERE path = ? AND qualname = ? ORDER BY content_hash", (path, qualname)
        )
        return ",".join(row[0] for row in rows) or None

    def references(self, name: str, path_prefix: str | None, limit: int) -> list[StoredReference]:
        """Use sites of `name`, by path and line, at most `limit`."""
        where = "name = ?"
        params: list[object] = [name]
        if path_prefix:
            condition, values = under(path_prefix)
            where += f" AND {condition}"
            params += values
        sites: list[StoredReference] = []
        for row in self._read(f"SELECT name, path, kind, lines FROM code_refs WHERE {where} ORDER BY path", params):
            if len(sites) >= limit and row["path"] != sites[-1].path:
                break  # every file that can be among the first `limit` sites is in
            sites.extend(StoredReference(row["name"], row["path"], int(line), row["kind"]) for line in row["lines"].split(","))
        sites.sort(key=lambda site: (site.path, site.line))
        return sites[:limit]

    def graph_rows(self) -> tuple[list[tuple[str, str, str, int, str, str]], list[tuple[str, str, int]]]:
        """What the repo map ranks: definitions as (path, name, kind, line, signature, parent); uses as (path, name, count)."""
        definitions = [tuple(row) for row in self._read("SELECT path, name, kind, start_line, signature, parent FROM code_symbols")]
        references = [tuple(row) for row in self._read("SELECT path, name, SUM(uses) FROM code_refs GROUP BY path, name")]
        return definitions, references  # type: ignore[return-value]

    def counts(self) -> CodeCounts:
        languages = {row[0]: row[1] for row in self._read("SELECT language, COUNT(*) FROM code_files GROUP BY language")}
        row = self._read("SELECT (SELECT COUNT(*) FROM code_symbols), (SELECT TOTAL(uses) FROM code_refs)")[0]
        return CodeCounts(sum(languages.values()), row[0], int(row[1]), languages)


def _next_code_rev(db: sqlite3.Connection) -> int:
    return db.execute("UPDATE counters SET value = value + 1 WHERE name = 'code_rev' RETURNING value").fetchone()[0]


def like_escape(text: str) -> str:
    """`text` as a literal inside a LIKE pattern written with `ESCAPE '\\'`."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def under(path: str) -> tuple[str, list[object]]:
    """A condition matching `path` itself or anything below it, with its parameters."""
    return "(path = ? OR path LIKE ? ESCAPE '\\')", [path, like_escape(path.rstrip("/") + "/") + "%"]


EXACT_NAME = "name = ? COLLATE NOCASE AND name = ?"  # the first half lets SQLite use the name index


def qualname_in(qualnames: Sequence[str]) -> tuple[str, list[object]]:
    """A condition matching symbols whose qualified name is one of `qualnames`, with its parameters."""
    return f"qualname IN ({','.join('?' * len(qualnames))})", list(qualnames)


def qualname_ends(qualnames: Sequence[str]) -> tuple[str, list[object]]:
    """A condition matching symbols whose qualified name ends with one of `qualnames` after a `.` or `::`."""
    params: list[object] = [f"%{separator}{like_escape(q)}" for q in qualnames for separator in (".", "::")]
    return " OR ".join(["qualname LIKE ? ESCAPE '\\'"] * len(params)), params


def scope(language: str | None, path: str | None) -> tuple[list[str], list[object]]:
    """Conditions (to be joined with AND) restricting symbols to a language and to a file or folder."""
    conditions: list[str] = []
    params: list[object] = []
    if language is not None:
        conditions.append("language = ?")
        params.append(language)
    if path is not None:
        condition, values = under(path)
        conditions.append(condition)
        params += values
    return conditions, params


def named(spelling: Spelling) -> tuple[str, list[object]]:
    """A condition matching the symbols `spelling` describes, with its parameters."""
    condition, params = (qualname_ends if spelling.suffix else qualname_in)(spelling.qualnames)
    if spelling.bare is not None:
        condition += f" OR ({EXACT_NAME})"
        params += [spelling.bare, spelling.bare]
    condition = f"({condition})"
    if spelling.module is not None:
        module = _glob_escape(spelling.module)
        condition += " AND (path GLOB ? OR path GLOB ?)"
        params += [f"{module}[./]*", f"*/{module}[./]*"]
    return condition, params


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)
