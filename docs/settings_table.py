"""The settings tables of README.md and docs/*.md, made from the settings' own descriptions (`config.py`).

    python docs/settings_table.py            # lists the tables that are out of date
    python docs/settings_table.py --write    # rewrites them

A table sits between `<!-- settings:NAME -->` and `<!-- /settings:NAME -->`: NAME is a group of `config.GROUPS`
(`hook` for `HookSettings`), or `all` for every group, one table each under its title. A setting's default is its
field's, or, when that is None, what its description says after "Default:". tests/test_readme.py checks that every
table is current.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from project_ledger.config import ENV_NAMES, ENV_PREFIX, GROUPS

ROOT = Path(__file__).resolve().parent.parent
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
_DEFAULT = re.compile(r"\s*Default: (.*?)\.?$", re.S)


def group_name(group: type[BaseModel]) -> str:
    return group.__name__.removesuffix("Settings").lower()


def row(name: str, field: FieldInfo) -> str:
    variables = ENV_NAMES.get(name, (f"{ENV_PREFIX}{name.upper()}",))
    meaning = " ".join((field.description or "").split())
    stated = _DEFAULT.search(meaning)
    if field.default is None or isinstance(field.default, SecretStr):
        default = stated.group(1) if stated else ""
    elif isinstance(field.default, bool):
        default = f"`{str(field.default).lower()}`"
    elif isinstance(field.default, str):
        default = f"`{field.default}`" if field.default else ""
    elif isinstance(field.default, float):
        default = f"{field.default:g}"
    else:
        default = str(field.default)
    if stated:
        meaning = meaning[: stated.start()]
    return "| " + " | ".join((", ".join(f"`{v}`" for v in variables), default, meaning)) + " |"


def table(group: type[BaseModel]) -> str:
    rows = [row(name, field) for name, field in group.model_fields.items()]
    return "\n".join(["| variable | default | meaning |", "|---|---|---|", *rows])


def tables() -> dict[str, str]:
    """Each section's text, by name."""
    found = {group_name(group): table(group) for group in GROUPS}
    titles = [f"**{(group.__doc__ or group.__name__).strip()}**\n\n{table(group)}" for group in GROUPS]
    return {**found, "all": "\n\n".join(titles)}


def _section(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- settings:{name} -->\n).*?(<!-- /settings:{name} -->)", re.S)


def stale(write: bool = False) -> list[str]:
    """The sections (`page: name`) whose text is not what the settings make now; with `write`, rewritten."""
    out = []
    for page in PAGES:
        text = original = page.read_text()
        for name, body in tables().items():
            found = _section(name).search(text)
            if found is not None and found.group(0) != found.group(1) + body + "\n" + found.group(2):
                out.append(f"{page.relative_to(ROOT)}: {name}")
                text = text[: found.start()] + found.group(1) + body + "\n" + found.group(2) + text[found.end() :]
        if write and text != original:
            page.write_text(text)
    return out


def sections() -> list[str]:
    """The names of the sections the pages hold."""
    text = "\n".join(page.read_text() for page in PAGES)
    return re.findall(r"<!-- settings:([\w-]+) -->", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the tables that are out of date")
    args = parser.parse_args()
    changed = stale(args.write)
    print("\n".join(changed) if changed else "every settings table is current")


if __name__ == "__main__":
    main()
