"""The command line and the `LEDGER_*` settings as read before the CLI is loaded: by a hook answered through the
project's server (`cli/fast_path.py`) and by the stdio proxy to a shared server (`cli/mcp_proxy.py`).

Standard library only (and the project finder's names, which are too): importing click or pydantic here would cost
every hook (tests/test_start_imports.py). The rules are the CLI's and the settings' own, so that the short way reads
what the full CLI would: `--name value` or `--name=value`, the last of a repeated option winning; variable names in
any case; a bool setting true when pydantic reads it as true.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from project_ledger.project_root import DATA_DIR_NAME

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # stderr's, set by the CLI or by a hook working alone
TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})  # pydantic's true spellings, in any case, unpadded (tests/test_config.py)


def environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with its names upper-cased, as the settings read them."""
    return {key.upper(): value for key, value in environ.items()}


def is_on(environ: Mapping[str, str], name: str) -> bool:
    """Whether the bool setting in variable `name` is true; unset, false or not a bool at all is not."""
    return environment(environ).get(name, "").lower() in TRUE


def options(args: Sequence[str], names: Collection[str]) -> dict[str, str] | None:
    """`args` as {option: value} when every one is an option in `names` with its value; None for anything else (help,
    an argument, another option, a value missing), which the full CLI answers with its own help and errors."""
    found: dict[str, str] = {}
    rest = list(args)
    while rest:
        name, has_value, value = rest.pop(0).partition("=")
        if name not in names:
            return None
        if not has_value:
            if not rest:
                return None
            value = rest.pop(0)
        found[name] = value
    return found


def named_data_dir(environ: Mapping[str, str], data_dir: str | None = None, root: Path | None = None) -> Path | None:
    """The data directory the settings name: `data_dir` (`--data-dir`), else LEDGER_DATA_DIR, else `.ledger` in `root`
    (`--root`) or in LEDGER_ROOT. None when none is named: the project is then found from a folder."""
    env = environment(environ)
    named = data_dir or env.get("LEDGER_DATA_DIR")
    if named:
        return Path(named).expanduser().resolve()
    if root is None and env.get("LEDGER_ROOT"):
        root = Path(env["LEDGER_ROOT"])
    return root.expanduser().resolve() / DATA_DIR_NAME if root is not None else None
