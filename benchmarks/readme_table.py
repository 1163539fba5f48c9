"""Replace a marked section of the README, or of a page in docs/, with fresh benchmark output.

A section is the text between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`, in README.md or in one of
docs/*.md (most tables live in docs/benchmarks.md). A benchmark writes its links relative to the repository's root,
as from the README; in a page under docs/ they are rewritten relative to that page.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
_LINK = re.compile(r"(\]\()(?!https?:|#|/)([^)\s]+)(\))")  # a relative link's target: ](path) or ](path#anchor)


def replace_section(name: str, body: str) -> Path:
    """Put `body` between the markers of section `name`, in whichever page holds them; that page's path."""
    pattern = re.compile(rf"(<!-- bench:{name} -->\n).*?(<!-- /bench:{name} -->)", re.S)
    for page in PAGES:
        text = page.read_text()
        if pattern.search(text):
            placed = relinked(body, page)
            page.write_text(pattern.sub(lambda m: m.group(1) + placed.rstrip() + "\n" + m.group(2), text))
            return page
    raise SystemExit(f"neither README.md nor docs/*.md has a <!-- bench:{name} --> section")


def relinked(body: str, page: Path) -> str:
    """`body`'s relative links, written from the repository's root, as seen from `page`."""
    if page.parent == ROOT:
        return body
    return _LINK.sub(lambda m: m.group(1) + os.path.relpath(ROOT / m.group(2), page.parent) + m.group(3), body)
