"""Definitions and references in one source file, from its tags query.

Everything language-specific lives in the query files (see `languages.py`);
this module only interprets the captures: it nests definitions by the byte
ranges they cover to get parents and qualified names, cuts the signature at
the node's `body` field, and reads doc comments from `@doc` captures or, when
the query has none, from the comments directly above the definition.
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

from project_ledger.code.languages import Grammar

SymbolKind = Literal["function", "method", "class", "struct", "interface", "enum", "trait", "type", "constant", "module", "macro"]
KINDS: tuple[str, ...] = get_args(SymbolKind)
# Kinds some upstream queries use, mapped onto ours; anything else (and `ignore`) is dropped.
KIND_ALIASES = {
    "constructor": "method",
    "namespace": "module",
    "object": "class",
    "union": "struct",
    "typedef": "type",
    "record": "class",
}
TYPE_KINDS = {"class", "struct", "interface", "enum", "trait", "type"}
METHOD_OWNERS = TYPE_KINDS | {"scope"}  # a function directly inside one of these is a method
# Nodes that wrap a definition without being one: comments sit above the wrapper.
WRAPPERS = {
    "decorated_definition",
    "export_statement",
    "template_declaration",
    "ambient_declaration",
    "attributed_declaration",
}
# Comment lines that are only decoration, and the markers that open or close a comment.
_COMMENT_MARKERS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?|//!|#+|--+\[*=*\[*|\]=*\])?\s?")
# Whatever can open a comment in a supported language (#, //, /*, --, Ruby's =begin); a header without any of
# these has no comment child, so its signature is simply the text up to the body.
_QUOTES = ('"""', "'''", '"', "'")  # a string literal's delimiters, longest first
_COMMENT_START = re.compile(rb"[#/]|--|=begin")
ATTRIBUTES = {"attribute_item"}  # Rust `#[derive(...)]` between a doc comment and its item
BODY_NODES = {"class_body", "function_body", "enum_class_body"}
SIGNATURE_CHARS = 300
DOC_CHARS = 800
BODY_HEAD_LINES = 4
BODY_HEAD_CHARS = 240


class Definition(NamedTuple):  # a tuple: one is built per definition, tens of thousands per large tree
    name: str
    qualname: str
    kind: str
    line: int  # 1-based, first line of the definition
    end_line: int
    signature: str
    doc: str
    parent: str  # the enclosing definition's qualified name, "" at top level
    content_hash: str
    body_head: str  # the first lines after the declaration's first line, for search


class References(NamedTuple):
    """One file's uses of one name in one way, as the store keeps them: a row per name and kind, not per site."""

    name: str
    kind: str  # call, class, type, ... as the query says
    lines: str  # 1-based, ascending, comma-separated: "3,17,42"
    uses: int


@dataclass
class FileSymbols:
    definitions: list[Definition] = field(default_factory=list)
    references: list[References] = field(default_factory=list)


@dataclass(slots=True)
class _Item:
    """A captured definition or scope before nesting is known."""

    name: str
    kind: str  # a KINDS value, or "scope"
    node: Any
    start: int  # the node's byte range, read once
    end: int
    pattern: int
    docs: list[Any]
    owner: str | None  # from an explicit @parent capture
    qualname: str = ""
    parent: _Item | None = None


def _text(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace")


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _signature(node: Any, source: bytes) -> str:
    """The declaration up to its body, on one line; without a body field, its first line."""
    body = node.child_by_field_name("body")
    if body is None and (value := node.child_by_field_name("value")) is not None:
        body = value.child_by_field_name("body")
    if body is None:  # grammars without a `body` field (Kotlin)
        body = next((child for child in node.named_children if child.type in BODY_NODES), None)
    if body is not None and body.start_byte > node.start_byte:
        head_bytes = source[node.start_byte : body.start_byte]
        if _COMMENT_START.search(head_bytes) is None:  # no comment in the header: what follows its last part is space
            return _one_line(head_bytes.decode("utf-8", errors="replace").rstrip().rstrip("{:=").rstrip(), SIGNATURE_CHARS)
        end = node.start_byte
        for child in node.children:  # up to the last part of the header that is not a comment
            if child.start_byte >= body.start_byte:
                break
            if "comment" not in child.type:
                end = min(child.end_byte, body.start_byte)
        head = source[node.start_byte : end].decode("utf-8", errors="replace")
        return _one_line(head.rstrip().rstrip("{:=").rstrip(), SIGNATURE_CHARS)
    first = source[node.start_byte : node.end_byte].split(b"\n", 1)[0].decode("utf-8", errors="replace")
    return _one_line(first.rstrip().rstrip("{").rstrip(), SIGNATURE_CHARS)


def _body_head(node: Any, source: bytes) -> str:
    chunk = source[node.start_byte : min(node.end_byte, node.start_byte + 4 * BODY_HEAD_CHARS)]
    kept: list[str] = []
    for line in chunk.decode("utf-8", errors="replace").splitlines()[1:]:
        if squeezed := " ".join(line.split()):
            kept.append(squeezed)
            if len(kept) == BODY_HEAD_LINES:
                break
    return " ".join(kept)[:BODY_HEAD_CHARS]


def _without_comment_close(line: str) -> str:
    stripped = line.rstrip()
    return stripped[:-2].rstrip() if stripped.endswith("*/") else line


def _clean_comment(text: str) -> str:
    lines = [_COMMENT_MARKERS.sub("", _without_comment_close(line), count=1).rstrip() for line in text.splitlines()]
    return "\n".join(line for line in lines).strip()


def _clean_string(text: str) -> str:
    """A docstring literal's contents: quotes and prefixes off, indentation evened."""
    unprefixed = text.lstrip("rRuUbBfF")
    quote = next((q for q in _QUOTES if len(unprefixed) >= 2 * len(q) and unprefixed.startswith(q) and unprefixed.endswith(q)), "")
    body = unprefixed[len(quote) : -len(quote)] if quote else text
    lines = body.strip("\n").splitlines()
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    cut = min(indents, default=0)
    return "\n".join([lines[0].strip(), *(line[cut:].rstrip() for line in lines[1:])]).strip() if lines else ""


def _doc(item: _Item) -> str:
    if item.docs:
        nodes = item.docs
    else:
        nodes = _comments_above(item.node)
    parts = [_clean_string(_text(n)) if "string" in n.type else _clean_comment(_text(n)) for n in nodes]
    doc = "\n".join(part for part in parts if part).strip()
    return doc if len(doc) <= DOC_CHARS else doc[: DOC_CHARS - 1] + "…"


def _comments_above(node: Any) -> list[Any]:
    """The run of comments ending on the line right above the definition (or its wrapper)."""
    while node.parent is not None and node.parent.type in WRAPPERS:
        node = node.parent
    found: list[Any] = []
    line = node.start_point[0]
    sibling = node.prev_sibling
    while sibling is not None and ("comment" in sibling.type or sibling.type in ATTRIBUTES) and sibling.end_point[0] >= line - 1:
        if "comment" in sibling.type:
            found.append(sibling)
        line = sibling.start_point[0]
        sibling = sibling.prev_sibling
    return found[::-1]


def _kind(capture: str) -> str | None:
    kind = capture.split(".", 1)[1]
    kind = KIND_ALIASES.get(kind, kind)
    return kind if kind in KINDS or kind == "ignore" else None


_REFERENCE, _DEFINITION = 0, 1
Plan = tuple[tuple[str, int, str, bool], ...]  # (capture, _REFERENCE or _DEFINITION, kind, look the capture up)
_plans_by_grammar: weakref.WeakKeyDictionary[Grammar, list[Plan]] = weakref.WeakKeyDictionary()
_plans_lock = threading.Lock()


def plans(grammar: Grammar) -> list[Plan]:
    """What each pattern of the grammar's query yields, worked out once per grammar rather than per match.

    For each pattern, its captures that have a role: (reference, its kind) or (definition, our kind, `scope` or
    `ignore`); capture names with no role are left out. A reference capture the pattern always has (no `?` or
    `*`) needs no lookup: a match of the pattern is that reference at its `@name`. The query is trimmed to
    match: patterns with no role are disabled (their matches were skipped anyway) and so are reference captures
    that never need a lookup, so the matches carry no nodes that nothing reads."""
    planned = _plans_by_grammar.get(grammar)
    if planned is not None:
        return planned
    with _plans_lock:  # the query is changed in place: once, and before any thread matches with the plans
        if (planned := _plans_by_grammar.get(grammar)) is None:
            planned = _plans_by_grammar[grammar] = _plan(grammar.query)
    return planned


def _plan(query: Any) -> list[Plan]:
    roles: dict[int, tuple[int, str]] = {}
    for index in range(query.capture_count):
        capture = query.capture_name(index)
        if capture.startswith("reference."):
            roles[index] = (_REFERENCE, capture[10:])
        elif capture == "scope":
            roles[index] = (_DEFINITION, "scope")
        elif capture.startswith("definition.") and (kind := _kind(capture)) is not None:
            roles[index] = (_DEFINITION, kind)
    planned: list[Plan] = []
    looked_up: set[int] = set()  # reference captures some pattern has optionally: those must stay in the matches
    for pattern in range(query.pattern_count):
        plan = []
        for index, (role, kind) in roles.items():
            quantifier = _quantifier(query, pattern, index)
            if quantifier is None:
                continue
            lookup = role == _DEFINITION or quantifier != ""
            if lookup:
                looked_up.add(index)
            plan.append((query.capture_name(index), role, kind, lookup))
        planned.append(tuple(plan))
        if not plan:
            query.disable_pattern(pattern)
    for index, (role, _) in roles.items():
        if role == _REFERENCE and index not in looked_up:
            query.disable_capture(query.capture_name(index))
    return planned


def _quantifier(query: Any, pattern: int, capture: int) -> str | None:
    """How often `capture` occurs in `pattern`: "" (once), "?", "*" or "+"; None when the pattern lacks it
    (py-tree-sitter 0.26 raises SystemError for that case rather than returning a value)."""
    try:
        quantifier = query.capture_quantifier(pattern, capture)
    except SystemError:
        return None
    return quantifier if quantifier in ("", "?", "*", "+") else None


def extract(grammar: Grammar, source: bytes) -> FileSymbols:
    """Parse `source` and read its definitions and references through the grammar's tags query."""
    from tree_sitter import QueryCursor

    tree = grammar.parser.parse(source)
    patterns = plans(grammar)
    items: dict[tuple[int, int, int], _Item] = {}
    references: dict[tuple[bytes, int], str] = {}  # (name, line) -> kind; names decoded once, at the end
    for pattern, captures in QueryCursor(grammar.query).matches(tree.root_node):
        names = captures.get("name")
        if not names:
            continue
        name_node = names[0]
        for capture, role, kind, lookup in patterns[pattern]:
            nodes = captures.get(capture) if lookup else []
            if nodes is None:
                continue
            if role == _REFERENCE:
                references.setdefault((source[name_node.start_byte : name_node.end_byte], name_node.start_point[0] + 1), kind)
                continue
            node = nodes[0]  # a definition is always looked up
            start, end = node.start_byte, node.end_byte
            key = (start, end, name_node.start_byte)
            if key in items and items[key].pattern > pattern:
                continue
            owner = captures.get("parent")
            items[key] = _Item(
                _text(name_node), kind, node, start, end, pattern, captures.get("doc", []), _text(owner[0]) if owner else None
            )
    return FileSymbols(_nest(grammar, source, items), _outside(references, items))


def _outside(references: dict[tuple[bytes, int], str], items: dict[tuple[int, int, int], _Item]) -> list[References]:
    """References minus the definitions' own names (some queries tag every type identifier), grouped by name
    and kind in the order each group is first seen; a name is decoded once however often it is used."""
    defined = {(item.name, item.node.start_point[0] + 1) for item in items.values() if item.kind not in ("ignore", "scope")}
    names: dict[bytes, str] = {}
    grouped: dict[tuple[str, str], list[int]] = {}
    for (raw, line), kind in references.items():
        name = names.get(raw)
        if name is None:
            name = names[raw] = raw.decode("utf-8", errors="replace")
        if (name, line) not in defined:
            grouped.setdefault((name, kind), []).append(line)
    return [References(name, kind, ",".join(map(str, sorted(lines))), len(lines)) for (name, kind), lines in grouped.items()]


def _nest(grammar: Grammar, source: bytes, items: dict[tuple[int, int, int], _Item]) -> list[Definition]:
    separator = grammar.spec.separator
    ordered = sorted(items.values(), key=lambda item: (item.start, -item.end))
    stack: list[_Item] = []
    definitions: list[Definition] = []
    for item in ordered:
        if item.kind == "ignore":
            continue
        while stack and (stack[-1].end <= item.start or (stack[-1].start == item.start and stack[-1].end == item.end)):
            stack.pop()  # ended before this one, or shares its node (`const A = 1, B = 2;`): not a parent
        item.parent = stack[-1] if stack else None
        if item.owner is not None:  # an explicit owner (Go receiver, C++ `Foo::bar`) inside any enclosing scope
            parent_name = item.owner if item.parent is None else f"{item.parent.qualname}{separator}{item.owner}"
            item.qualname = f"{parent_name}{separator}{item.name}"
        elif item.parent is not None:
            item.qualname = f"{item.parent.qualname}{separator}{item.name}"
            parent_name = item.parent.qualname
            if item.kind == "function" and item.parent.kind in METHOD_OWNERS:
                item.kind = "method"
        else:
            item.qualname, parent_name = item.name, ""
        stack.append(item)
        if item.kind == "scope":
            continue
        node = item.node
        definitions.append(
            Definition(  # positional: name, qualname, kind, line, end line, signature, doc, parent, hash, body head
                item.name,
                item.qualname,
                item.kind,
                node.start_point[0] + 1,
                node.end_point[0] + 1,
                _signature(node, source),
                _doc(item),
                parent_name,
                hashlib.blake2b(source[item.start : item.end], digest_size=8).hexdigest(),
                _body_head(node, source),
            )
        )
    return definitions
