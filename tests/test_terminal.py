"""What the CLI prints never carries a raw control character: human output shows each as an escape, JSON output
escapes what JSON allows raw, and what is stored stays byte for byte."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from project_ledger.cli.terminal import json_safe, visible

from .conftest import EXECUTABLE, Project, cli, connect

pytestmark = pytest.mark.anyio

# BEL, BS, NUL, DEL, ESC, C1's CSI, a right-to-left override and its pop, a lone CR; then CRLF and tab, which stay
ACTING = "bell\x07 back\x08 nul\x00 del\x7f esc\x1b[2J csi\x9b31m rlo\u202eevil\u202c cr\roverwritten"
HARMLESS = " crlf\r\nnext line\tand a tab"
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")


def shell(project: Project, command: str, *args: str) -> tuple[int, str, str]:
    """A CLI command's exit status, stdout and stderr, decoded without newline translation: a raw CR would show."""
    done = subprocess.run(
        [EXECUTABLE, command, "--root", str(project.root), *args],
        stdin=subprocess.DEVNULL, capture_output=True, env={**os.environ, **project.env}, cwd=project.root, timeout=300,
    )  # fmt: skip
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def test_each_acting_character_is_shown_as_its_escape() -> None:
    assert visible("a\x07b\x08c\x00d\x7fe\x1bf\x9bg\u202eh\u2066i\u200fj") == (
        "a\\x07b\\x08c\\x00d\\x7fe\\x1bf\\x9bg\\u202eh\\u2066i\\u200fj"
    )
    assert visible("cr\rhere, crlf\r\nthere\ttab") == "cr\\x0dhere, crlf\r\nthere\ttab"
    assert visible("plain text, naïve café, 日本語, emoji 👩‍💻, C:\\path") == "plain text, naïve café, 日本語, emoji 👩‍💻, C:\\path"
    assert RAW.search(visible("".join(map(chr, range(0x3000))))) is None


def test_json_keeps_its_meaning_with_no_raw_character_left() -> None:
    text = ACTING + HARMLESS + "\u2028 and a quote \" and \\"
    raw = json.dumps({"text": text}, ensure_ascii=False, indent=2)
    assert "\x7f" in raw and "\u202e" in raw  # JSON allows these raw
    safe = json_safe(raw)
    assert RAW.search(safe) is None and json.loads(safe) == {"text": text}
    assert json_safe('{\r\n  "a": 1\r\n}') == '{\r\n  "a": 1\r\n}'  # whitespace between tokens is left alone


async def test_the_cli_shows_stored_control_characters_and_stores_them_byte_for_byte(project: Project) -> None:
    text = "Deploys ring the pager: " + ACTING + HARMLESS
    async with connect(project) as agent:  # over MCP: a shell argument cannot carry NUL
        memory = await agent.remember(text, kind="decision", pinned=True)
        await agent.settled()

    assert cli(project, "history", memory, "--json")["chain"][-1]["text"] == text
    outputs = {
        "history": shell(project, "history", memory),
        "recall": shell(project, "recall", "pager deploys"),
        "context": shell(project, "context"),  # the session-start pack, which shows pinned memories
        "forget preview": shell(project, "forget", memory),  # no terminal to confirm on: shows it, then aborts
    }
    for name, (_, out, err) in outputs.items():
        shown = out + err
        assert "ring the pager" in shown, name
        assert RAW.search(shown) is None, (name, shown)
        assert "bell\\x07 back\\x08 nul\\x00 del\\x7f esc\\x1b[2J csi\\x9b31m rlo\\u202eevil\\u202c cr\\x0doverwritten" in shown, name
        assert HARMLESS in shown, name

    read_back = {
        "history": lambda out: out["chain"][-1]["text"] == text,
        "recall": lambda out: out["results"][0]["text"] == text,
        "context": lambda out: text in out["text"],
    }
    for command, args in (("history", [memory]), ("recall", ["pager deploys"]), ("context", [])):
        status, printed, err = shell(project, command, *args, "--json")
        assert status == 0 and RAW.search(printed + err) is None, command
        assert read_back[command](json.loads(printed)), command

    status, exported, err = shell(project, "export")
    assert status == 0 and RAW.search(exported + err) is None
    assert [json.loads(line).get("text") for line in exported.splitlines()][1:] == [text]


def test_a_file_name_from_the_repository_is_shown_not_obeyed(project: Project) -> None:
    (project.root / "retitle\x1b]0;pwned\x07\u202e.py").write_text("def page_oncall() -> None:\n    pass\n")
    status, out, err = shell(project, "symbols", "page_oncall")
    assert status == 0 and RAW.search(out + err) is None, out + err
    assert "retitle\\x1b]0;pwned\\x07\\u202e.py" in out
    status, out, _ = shell(project, "symbols", "page_oncall", "--json")
    assert json.loads(out)["symbols"][0]["path"] == "retitle\x1b]0;pwned\x07\u202e.py"
