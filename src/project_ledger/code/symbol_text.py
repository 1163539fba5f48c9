"""The first line of what code search reads for a symbol: its kind and qualified name, then the words those and its
file's path spell. Pure; parse workers import it.

The model reads `ColorTriplet.normalized` as word pieces that mean little; "color triplet normalized in rich color
triplet" it reads as words. With them (and `without_signature`), docstring-to-symbol MRR@10 of the dense list alone
went from 0.488 to 0.535 on rich (the tree they were chosen on), and up on click, zod and httpx too (README, "Code
search").
"""

from __future__ import annotations

# Bump when `heading`, `rows.embed_text` or code search's BM25 settings (`tuning.CODE_BM25_AVG_LEN`) change: a store
# opened by code search re-hashes its symbols' texts (`CodeStore.refresh_texts`), so they are embedded again in the
# background and re-indexed.
TEXT_VERSION = 3  # 1: no version recorded; 2: the heading; 3: and no signature repeated in the body head
# Path parts that say nothing about what a file holds.
_PLAIN_PARTS = frozenset({"src", "__init__", "index"})
MODULE_PARTS = 2  # the file and its folder: `rich/color_triplet.py` -> "rich color triplet"
MIN_REPEAT_CHARS = 12  # of a signature repeated at the start of a body head, to be cut (`without_signature`)


def name_words(name: str) -> str:
    """The lower-case words of an identifier or a qualified name, space-separated.

    Split at anything that is not a letter or digit (`snake_case`, `Type.method`, `$ZodType`, `__rich_console__`),
    at a lower-to-upper change (`camelCase`), before the last capital of a run followed by a lower-case letter
    (`HTTPServer` -> http server) and between letters and digits (`v4` -> v 4). Any script's letters count.
    """
    words: list[str] = []
    current: list[str] = []
    previous = ""
    for i, char in enumerate(name):
        if not char.isalnum():
            previous = ""
            if current:
                words.append("".join(current))
                current = []
            continue
        following = name[i + 1] if i + 1 < len(name) else ""
        boundary = previous and (
            (previous.islower() and char.isupper())
            or (previous.isdigit() != char.isdigit())
            or (previous.isupper() and char.isupper() and following.islower())
        )
        if boundary and current:
            words.append("".join(current))
            current = []
        current.append(char)
        previous = char
    if current:
        words.append("".join(current))
    return " ".join(word.lower() for word in words)


def module_words(path: str) -> str:
    """The words of a file's last MODULE_PARTS path parts, without its extension and parts such as `src` or
    `__init__`: `src/rich/color_triplet.py` -> "rich color triplet", `click/__init__.py` -> "click"."""
    *folders, file = path.split("/")
    stem = file.rsplit(".", 1)[0] if "." in file else file
    parts = [part for part in (*folders, stem) if part and part not in _PLAIN_PARTS]
    return name_words(" ".join(parts[-MODULE_PARTS:]))


def without_signature(signature: str, body_head: str) -> str:
    """`body_head` without what it repeats of `signature`: a declaration over several lines has its later lines in
    both (`self, text: str = "", *,` after `def render( self, text: str = "", *, color_system: ...) -> str`).

    The body head's longest run of first words found in the signature after a space is cut when it is at least
    MIN_REPEAT_CHARS long (so a body that merely starts with a parameter's name is kept), with the `:` or `{` that
    closed the declaration. Words are added one at a time and the first miss stops: a body that does not start
    with the signature costs one look-up.
    """
    words = body_head.split(" ")
    taken = 0
    while taken < len(words) and f" {' '.join(words[: taken + 1]).rstrip(':{')}" in signature:
        taken += 1
    if len(" ".join(words[:taken])) < MIN_REPEAT_CHARS:
        return body_head
    return " ".join(words[taken:]).lstrip(" :{;=")


def heading(kind: str, qualname: str, path: str) -> str:
    """`method ColorTriplet.normalized: color triplet normalized in rich color triplet`: the exact name for a query
    that spells it, its words for one that describes it."""
    where = module_words(path)
    return f"{kind} {qualname}: {name_words(qualname)}" + (f" in {where}" if where else "")
