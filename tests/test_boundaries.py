"""Imports flow one way: MCP tools and CLI -> ledger service -> journal, indexers. Checked from the source with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EDGES = {"server/cli.py", "server/mcp_app.py", "server/__main__.py"}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(("." * node.level) + node.module)
    return names


@pytest.mark.parametrize(
    "path",
    sorted(str(p.relative_to(ROOT)) for p in (ROOT / "server").glob("*.py") if str(p.relative_to(ROOT)) not in EDGES),
)
def test_the_service_layer_knows_nothing_of_mcp_or_click(path: str) -> None:
    imports = imported_modules(ROOT / path)
    assert not {name for name in imports if name.split(".")[0] in {"mcp", "mcp_types", "click"}}, path
    assert not {name for name in imports if name.lstrip(".") in {"cli", "mcp_app"}}, path


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "indexers").glob("*.py")))
def test_indexers_do_not_reach_up_into_the_server(path: str) -> None:
    imports = imported_modules(ROOT / path)
    assert not {name for name in imports if name.startswith("project_ledger") and "indexers" not in name}, path
    assert not {name for name in imports if name.split(".")[0] in {"mcp", "mcp_types", "click", "pydantic_settings"}}, path
