"""What a project's manifests at its root say about it, for `init`'s draft: its name and description, the language
version it needs, and the lint, format and type-check commands its configuration sets up.

`pyproject.toml` (PEP 621 or Poetry), `package.json`, `Cargo.toml` and `go.mod` are read, plus the standalone
configuration files of common linters. Nothing is executed. A manifest that cannot be read or parsed is skipped: the
draft then says less, and `init` still works.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_MANIFEST_BYTES = 1_000_000  # larger than any real manifest; a bigger file is not read
MAX_VALUE_CHARS = 300  # of a name, description or version copied into the draft


@dataclass
class Manifest:
    name: str | None = None
    description: str | None = None
    versions: list[str] = field(default_factory=list)  # "Python >=3.9 (requires-python)"
    checks: list[str] = field(default_factory=list)  # commands: "ruff check .", "mypy"
    conventions: list[str] = field(default_factory=list)  # settings a reader should follow: "line length 100 (ruff)"
    run: str | None = None  # the command that runs the project locally, when a manifest names one


def read_manifests(root: Path, runner: str = "") -> Manifest:
    """Everything the manifests at `root` say; the first manifest that names the project names it. `runner` prefixes
    Python tools (`uv run `, `poetry run `) as the project runs them."""
    found = Manifest()
    for read in (_pyproject, _package_json, _cargo, _go_mod):
        read(root, found, runner)
    found.checks = list(dict.fromkeys(found.checks))
    return found


def _text(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _toml(path: Path) -> dict[str, Any]:
    text = _text(path)
    try:
        return tomllib.loads(text) if text is not None else {}
    except tomllib.TOMLDecodeError:
        return {}


def _table(document: Any, *keys: str) -> dict[str, Any]:
    """`document[keys[0]][keys[1]]...`, or an empty table where any level is missing or not a table."""
    for key in keys:
        document = document.get(key) if isinstance(document, dict) else None
    return document if isinstance(document, dict) else {}


def _string(value: Any) -> str | None:
    """A manifest's text value on one line, cut to MAX_VALUE_CHARS; None if it is not text or is empty."""
    if not isinstance(value, str):
        return None
    return " ".join(value.split())[:MAX_VALUE_CHARS] or None


def _name(found: Manifest, name: Any, description: Any) -> None:
    if found.name is None and (name := _string(name)):
        found.name, found.description = name, _string(description)


def _pyproject(root: Path, found: Manifest, runner: str) -> None:
    document = _toml(root / "pyproject.toml")
    project, poetry, tool = _table(document, "project"), _table(document, "tool", "poetry"), _table(document, "tool")
    _name(found, project.get("name") or poetry.get("name"), project.get("description") or poetry.get("description"))
    if python := _string(project.get("requires-python")) or _string(_table(poetry, "dependencies").get("python")):
        found.versions.append(f"Python {python}")
    scripts = [name for name in (*_table(project, "scripts"), *_table(poetry, "scripts")) if _string(name)]
    if scripts and found.run is None:
        found.run = f"{runner}{_string(scripts[0])}"
    ruff = _table(tool, "ruff") if isinstance(tool.get("ruff"), dict) else _toml(root / "ruff.toml") or _toml(root / ".ruff.toml")
    if ruff or (root / "ruff.toml").is_file() or (root / ".ruff.toml").is_file():
        found.checks += [f"{runner}ruff check .", f"{runner}ruff format --check ."]
        _line_length(found, ruff.get("line-length"), "ruff")
    if black := _table(tool, "black"):
        found.checks.append(f"{runner}black --check .")
        _line_length(found, black.get("line-length"), "black")
    if "isort" in tool:
        found.checks.append(f"{runner}isort --check .")
    if "flake8" in tool or (root / ".flake8").is_file() or "[flake8]" in (_text(root / "setup.cfg") or ""):
        found.checks.append(f"{runner}flake8")
    if "pylint" in tool or (root / ".pylintrc").is_file():
        found.checks.append(f"{runner}pylint {found.name or '.'}")
    mypy = _table(tool, "mypy")
    if mypy or "mypy" in tool or (root / "mypy.ini").is_file() or (root / ".mypy.ini").is_file():
        found.checks.append(f"{runner}mypy" + ("" if mypy.get("files") else " ."))
        if mypy.get("strict") is True:
            found.conventions.append("type-checked with mypy --strict")
    if "pyright" in tool or (root / "pyrightconfig.json").is_file():
        found.checks.append(f"{runner}pyright")


def _line_length(found: Manifest, value: Any, tool: str) -> None:
    if isinstance(value, int) and not any(line.startswith("line length") for line in found.conventions):
        found.conventions.append(f"line length {value} ({tool})")


def _package_json(root: Path, found: Manifest, _runner: str) -> None:
    text = _text(root / "package.json")
    try:
        document = json.loads(text) if text is not None else {}
    except ValueError:
        return
    if not isinstance(document, dict):
        return
    _name(found, document.get("name"), document.get("description"))
    if node := _string(_table(document, "engines").get("node")):
        found.versions.append(f"Node {node}")
    manager = "pnpm" if (root / "pnpm-lock.yaml").is_file() else "yarn" if (root / "yarn.lock").is_file() else "npm"
    scripts = _table(document, "scripts")
    for script in ("lint", "format", "typecheck", "type-check", "check"):
        if isinstance(scripts.get(script), str):
            found.checks.append(f"{manager} run {script}")
    if found.run is None:
        found.run = next((f"{manager} run {script}" for script in ("dev", "start") if isinstance(scripts.get(script), str)), None)


def _cargo(root: Path, found: Manifest, _runner: str) -> None:
    document = _toml(root / "Cargo.toml")
    if not document:
        return
    package = _table(document, "package")
    _name(found, package.get("name"), package.get("description"))
    rust = [f"edition {edition}" for edition in [_string(package.get("edition"))] if edition]
    rust += [f"rust-version {version}" for version in [_string(package.get("rust-version"))] if version]
    if rust:
        found.versions.append(f"Rust ({', '.join(rust)})")
    found.checks += ["cargo clippy", "cargo fmt --check"]
    if found.run is None and package and not _table(document, "lib") and (root / "src" / "main.rs").is_file():
        found.run = "cargo run"


def _go_mod(root: Path, found: Manifest, _runner: str) -> None:
    text = _text(root / "go.mod")
    if text is None:
        return
    for line in text.splitlines():
        words = line.split("//", 1)[0].split()
        if len(words) == 2 and words[0] in ("module", "go"):
            found.versions.append(f"Go {'module ' * (words[0] == 'module')}{_string(words[1].strip(chr(34)))}")
            if words[0] == "module":
                _name(found, words[1].strip('"').rsplit("/", 1)[-1], None)
    found.checks += ["go vet ./...", "gofmt -l ."]
    if (root / ".golangci.yml").is_file() or (root / ".golangci.yaml").is_file():
        found.checks.append("golangci-lint run")
