"""Imports flow one way: MCP tools and CLI -> ledger service -> journal, index sync -> indexers.

Checked from the source with `ast`, relative imports resolved to the installed names
(`server/` is `project_ledger`, `indexers/` is `project_ledger.indexers`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"server": "project_ledger", "indexers": "project_ledger.indexers"}
EDGES = {
    "project_ledger.cli",
    "project_ledger.cli_support",
    "project_ledger.cli_setup",
    "project_ledger.cli_migrate",
    "project_ledger.cli_memories",
    "project_ledger.client_config",
    "project_ledger.inspector",
    "project_ledger.inspector_params",
    "project_ledger.inspector_security",
    "project_ledger.cli_inspect",
    "project_ledger.mcp_app",
    "project_ledger.mcp_roots",
    "project_ledger.stdio_transport",
    "project_ledger.http_transport",
    "project_ledger.__main__",
}
BELOW_THE_SERVICE = {"project_ledger.journal", "project_ledger.index_sync", "project_ledger.compaction"}


def module_name(path: Path) -> str:
    return f"{PACKAGES[path.parent.name]}.{path.stem}"


def imports_of(path: Path) -> set[str]:
    package = PACKAGES[path.parent.name].split(".")
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)  # `from . import x` imports module x
    return names


def sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).glob("*.py"))


def test_relative_imports_resolve_to_installed_names() -> None:
    assert "project_ledger.journal" in imports_of(ROOT / "server" / "ledger.py")
    assert "project_ledger.indexers.search_index" in imports_of(ROOT / "indexers" / "edge_index.py")


@pytest.mark.parametrize("path", [p for p in sources("server") if module_name(p) not in EDGES], ids=lambda p: p.name)
def test_the_service_layer_knows_nothing_of_mcp_click_or_its_callers(path: Path) -> None:
    imports = imports_of(path)
    assert not {name for name in imports if name.split(".")[0] in {"mcp", "mcp_types", "click"}}
    assert not imports & EDGES


@pytest.mark.parametrize("path", [p for p in sources("server") if module_name(p) in BELOW_THE_SERVICE], ids=lambda p: p.name)
def test_storage_modules_do_not_call_back_into_the_service(path: Path) -> None:
    assert "project_ledger.ledger" not in imports_of(path)


@pytest.mark.parametrize("path", sources("indexers"), ids=lambda p: p.name)
def test_indexers_do_not_reach_up_into_the_server(path: Path) -> None:
    imports = imports_of(path)
    assert not {n for n in imports if n.startswith("project_ledger") and not n.startswith("project_ledger.indexers")}
    assert not {n for n in imports if n.split(".")[0] in {"mcp", "mcp_types", "click", "pydantic_settings"}}
