"""Imports flow one way, and the folders say which: entry points (`mcp/`, `cli/`, `inspector/`) on top,
`memory/`, `code/` and `maintenance/` below them, `storage/` and `search/` under those, `text/` at the bottom;
`hooks/` beside them, standard library only, holds what differs between the clients whose hooks the ledger answers.

Checked from the source with `ast`; the import names are the paths under `src/`.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "project_ledger"
ENTRY_POINTS = {"project_ledger.mcp", "project_ledger.cli", "project_ledger.inspector"}
FRAMEWORKS = {"mcp", "mcp_types", "click", "starlette", "uvicorn", "jinja2"}
SERVICES = {"project_ledger.memory", "project_ledger.code", "project_ledger.maintenance"}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports, relative imports resolved; `from a import b` counts as a and a.b."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def room(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def within(names: set[str], prefixes: set[str]) -> set[str]:
    return {n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes)}


def test_import_names_are_the_source_paths() -> None:
    assert module_name(PACKAGE / "memory" / "service.py") == "project_ledger.memory.service"
    assert "project_ledger.storage.journal" in imports_of(PACKAGE / "memory" / "service.py")


LOWER = [*room("text"), *room("storage"), *room("search"), *room("code"), *room("memory"), *room("maintenance")]


@pytest.mark.parametrize("path", LOWER, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_below_the_entry_points_nothing_knows_mcp_click_http_or_its_callers(path: Path) -> None:
    imports = imports_of(path)
    assert not {n for n in imports if n.split(".")[0] in FRAMEWORKS}
    assert not within(imports, ENTRY_POINTS)


@pytest.mark.parametrize("path", [*room("storage"), *room("search")], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_storage_and_search_never_call_up_into_the_services(path: Path) -> None:
    assert not within(imports_of(path), SERVICES)


@pytest.mark.parametrize("path", room("search"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_search_does_not_know_the_journal(path: Path) -> None:
    assert not within(imports_of(path), {"project_ledger.storage"})


@pytest.mark.parametrize("path", room("text"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_text_imports_nothing_of_the_project_but_text(path: Path) -> None:
    assert not {n for n in imports_of(path) if n.split(".")[0] == "project_ledger" and not within({n}, {"project_ledger.text"})}


@pytest.mark.parametrize("path", [*room("storage"), *room("search"), *room("code")], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_storage_search_and_code_take_plain_values_not_settings(path: Path) -> None:
    imports = imports_of(path)
    assert not within(imports, {"project_ledger.config", "project_ledger.factory"})
    assert "pydantic_settings" not in {n.split(".")[0] for n in imports}


SERVICE_PARTS = {"sync", "gateway", "journal", "indexer", "store"}


@pytest.mark.parametrize("path", [*room("mcp"), *room("cli"), *room("inspector")], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_entry_points_call_service_methods_not_the_parts_behind_them(path: Path) -> None:
    reaches = [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr in SERVICE_PARTS
    ]
    assert not reaches


CODE_PARTS = {"indexer", "store", "search", "watcher"}


@pytest.mark.parametrize("path", room("memory"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_memory_service_asks_the_code_service_not_the_parts_behind_it(path: Path) -> None:
    reaches = [
        f"line {node.lineno}: code.{node.attr}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr in CODE_PARTS
        and isinstance(node.value, ast.Attribute | ast.Name) and getattr(node.value, "attr", getattr(node.value, "id", "")) == "code"
    ]  # fmt: skip
    assert not reaches


@pytest.mark.parametrize("path", LOWER, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_below_the_entry_points_nothing_imports_the_composition_root(path: Path) -> None:
    assert not within(imports_of(path), {"project_ledger.factory"})


def test_only_the_sdk_adapter_reaches_into_the_mcp_sdks_private_parts() -> None:
    private = {"_lowlevel_server"}
    users = {
        module_name(path)
        for path in PACKAGE.rglob("*.py")
        if any(isinstance(node, ast.Attribute) and node.attr in private for node in ast.walk(ast.parse(path.read_text())))
    }
    assert users == {"project_ledger.mcp.sdk"}


@pytest.mark.parametrize("path", room("hooks"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_hooks_package_is_standard_library_only(path: Path) -> None:
    """What a hook's short way loads before anything else of the ledger: every import there is paid on every prompt."""
    outside = {
        n
        for n in imports_of(path)
        if n.split(".")[0] not in sys.stdlib_module_names and n != "__future__" and not within({n}, {"project_ledger.hooks"})
    }
    assert not outside


@pytest.mark.parametrize("path", room("memory"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_conversation_service_knows_the_hook_event_not_a_clients_protocol(path: Path) -> None:
    assert not within(imports_of(path), {"project_ledger.hooks.clients"})


def client_name_tests(path: Path, names: set[str]) -> list[str]:
    """The lines of `path` that compare a value with a hook client's name (`== "cursor"`, `in ("claude-code", ...)`)."""

    def names_in(node: ast.expr) -> bool:
        values = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
        return any(isinstance(value, ast.Constant) and value.value in names for value in values)

    return [
        f"line {node.lineno}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Compare) and any(names_in(side) for side in [node.left, *node.comparators])
    ]


def test_only_a_clients_adapter_branches_on_its_name() -> None:
    """A new client is its adapter module and a line in the registry (`hooks/clients/__init__.py`): nothing else
    asks which client it is serving."""
    from project_ledger.hooks.clients import HOOK_CLIENTS

    adapters = set(room("hooks/clients"))
    branching = {
        str(path.relative_to(PACKAGE)): lines
        for path in PACKAGE.rglob("*.py")
        if path not in adapters and (lines := client_name_tests(path, set(HOOK_CLIENTS)))
    }
    assert branching == {}
