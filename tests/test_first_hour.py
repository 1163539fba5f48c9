"""What a new user hit in their first hour (issue 19), each through the CLI or a real MCP client."""

from __future__ import annotations

import pytest

from .conftest import Project, cli, run_cli

pytestmark = pytest.mark.anyio


def test_cli_remember_checks_for_near_duplicates(project: Project) -> None:
    first = cli(project, "remember", "Use Console(record=True) to capture the output in tests", "--kind", "decision", "--json")
    assert first["created"] and first["note"] is None
    again = cli(project, "remember", "Use Console(record=True) to capture all the output in tests", "--kind", "decision", "--json")
    assert not again["created"] and again["duplicate_of"] == first["id"]

    plain = run_cli(project, "remember", "Use Console(record=True) to capture all output in tests", "--kind", "decision")
    assert plain.returncode == 0 and plain.stdout.strip() == f"{first['id']} (already stored)"
    assert "already says this" in plain.stderr
