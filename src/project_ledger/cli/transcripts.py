"""`project-ledger import-transcripts`: months of past Claude Code sessions made searchable in one command."""

from __future__ import annotations

import json
from pathlib import Path

import click

from project_ledger.cli.progress import progress_bars
from project_ledger.cli.support import ledger_errors, opened, project_options
from project_ledger.cli.terminal import say, say_json
from project_ledger.config import Settings
from project_ledger.hooks.clients.claude_code import transcripts_folder
from project_ledger.memory.conversation import Conversation, HookParams


def transcript_files(paths: tuple[Path, ...], root: Path) -> list[Path]:
    """The `.jsonl` files named, or under the folders named; by default this project's Claude Code folder."""
    if not paths:
        folder = transcripts_folder(root)
        if not folder.is_dir():
            raise click.ClickException(f"no Claude Code transcripts for {root} in {folder}; name the files or folders to import")
        paths = (folder,)
    found: list[Path] = []
    for path in paths:
        found += sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    return list(dict.fromkeys(found))


@click.command("import-transcripts")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
@click.option("--no-gists", is_flag=True, help="Do not write each imported session's gist.")
@project_options
@ledger_errors
def import_transcripts(settings: Settings, paths: tuple[Path, ...], as_json: bool, no_gists: bool) -> None:
    """Import past Claude Code sessions (JSONL transcripts): their prompts and replies become turns, with their
    original dates and session ids, then each session with new turns gets its gist. Running it again stores
    nothing twice.

    PATHS: transcript files or folders of them. Default: this project's folder under ~/.claude/projects/.

    \b
    Examples:
      project-ledger import-transcripts
      project-ledger import-transcripts ~/.claude/projects/-home-me-src-app/
    """
    with opened(settings) as ledger, progress_bars() as report:
        files = transcript_files(paths, ledger.paths.root)
        done = Conversation(ledger, HookParams(), lambda: None).import_transcripts(files, gists=not no_gists, progress=report)
    if as_json:
        say_json(json.dumps({"files": done.files, "new_turns": done.new_turns, "gists": done.gists}))
        return
    sessions = len(done.new_turns)
    say(f"imported {sum(done.new_turns.values())} new turns from {done.files} transcripts ({sessions} sessions)")
    for session, note in done.gists.items():
        say(f"  {session}: {note}", err=True)
