"""Replace a marked section of the README with fresh benchmark output.

A section is the text between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def replace_section(name: str, body: str) -> None:
    text = README.read_text()
    pattern = re.compile(rf"(<!-- bench:{name} -->\n).*?(<!-- /bench:{name} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no <!-- bench:{name} --> section")
    README.write_text(pattern.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(2), text))


def publish(name: str, body: str, write: bool) -> None:
    """Print a benchmark's section, and with `write` put it in the README."""
    print(body)
    if write:
        replace_section(name, body)
