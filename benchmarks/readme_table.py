"""Replace a marked section of the README with fresh benchmark output.

A section is the text between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`.
"""

from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def machine() -> str:
    """What a figure was measured on, for a benchmark's footer."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def measured(command: str, load_before: float, load_after: float) -> str:
    """A footer's last sentence: when, where, under what load and with which command a table was measured."""
    return (
        f"Measured {time.strftime('%Y-%m-%d')} on {machine()} (shared; load average {load_before:.1f} before, "
        f"{load_after:.1f} after), with `{command}`."
    )


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
