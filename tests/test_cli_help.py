"""Every command explains itself with examples, and every command that lists things speaks JSON too."""

from __future__ import annotations

import re
import subprocess

from .conftest import EXECUTABLE

LISTING = {"recall", "context", "status", "doctor", "import", "index", "symbols", "summarize", "remember", "history"}


def help_text(*command: str) -> str:
    completed = subprocess.run([EXECUTABLE, *command, "--help"], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_every_command_has_examples_and_listing_commands_take_json() -> None:
    overview = help_text()
    commands = re.findall(r"^  (\w[\w-]*)\s", overview.split("Commands:")[1].split("Examples:")[0], re.MULTILINE)
    assert {"init", "config", "serve", "inspect", "migrate", "forget"} <= set(commands)
    for command in commands:
        text = help_text(command)
        assert "Example" in text and f"project-ledger {command}" in text, f"`{command} --help` has no example"
        if command in LISTING:
            assert "--json" in text, f"`{command}` lists things but has no --json"
    assert "--debug" in overview
