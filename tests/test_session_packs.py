"""The record of what each session was handed of the session-start pack (`session_packs.py`), and which of Claude
Code's events run the ledger's hook (`hooks/clients/claude_code.py`): pure functions over files, tested in-process, with
several processes racing for one session."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

from project_ledger.hooks.clients.claude_code import ledger_hook_events
from project_ledger.session_packs import hand, handed, record_path


def test_a_session_is_handed_its_pack_once_and_again_after_a_compaction_or_a_clear(tmp_path: Path) -> None:
    assert handed(tmp_path, "s1") is None
    assert hand(tmp_path, "s1", "startup", ["m1", "m2"])
    assert handed(tmp_path, "s1") == ["m1", "m2"]
    assert not hand(tmp_path, "s1", "resume", ["m3"])  # continued or resumed: its history holds the pack
    assert handed(tmp_path, "s1") == ["m1", "m2"]
    assert hand(tmp_path, "s1", "compact", ["g1", "m1"]) and handed(tmp_path, "s1") == ["g1", "m1"]
    assert hand(tmp_path, "s1", "clear", []) and handed(tmp_path, "s1") == []
    assert hand(tmp_path, "s2", None, ["m1"]) and handed(tmp_path, "s2") == ["m1"]  # another session: its own record
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == sorted(
        record_path(tmp_path, s).name for s in ("s1", "s2")
    )  # no temporary file is left behind


def test_a_record_for_another_session_or_a_damaged_one_counts_as_none(tmp_path: Path) -> None:
    hand(tmp_path, "s1", "startup", ["m1"])
    path = record_path(tmp_path, "s1")
    path.write_text(json.dumps({"session": "someone else", "ids": ["m1"]}))
    assert handed(tmp_path, "s1") is None
    path.write_text("{not json")
    assert handed(tmp_path, "s1") is None


def test_a_data_directory_where_no_record_can_be_written_still_hands_the_pack(tmp_path: Path) -> None:
    (tmp_path / "sessions").write_text("a file where the folder should be")
    assert hand(tmp_path, "s1", "startup", ["m1"])  # not recorded, but never withheld
    assert handed(tmp_path, "s1") is None


def _race(data_dir: str, start: Any, results: Any) -> None:
    start.wait()
    results.put(hand(Path(data_dir), "shared", "startup", ["m1"]))


def test_of_processes_starting_one_session_at_once_exactly_one_hands_the_pack(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    racers = [context.Process(target=_race, args=(str(tmp_path), start, results)) for _ in range(6)]
    for racer in racers:
        racer.start()
    start.set()
    for racer in racers:
        racer.join(timeout=60)
    assert sorted(results.get(timeout=10) for _ in racers) == [False] * 5 + [True]


def test_the_ledger_hook_events_are_read_from_the_users_and_the_projects_settings(tmp_path: Path) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    command = {"type": "command", "command": "/venv/bin/python -m project_ledger hook claude-code"}
    (root / ".claude").mkdir(parents=True)
    (home / ".claude").mkdir(parents=True)
    assert ledger_hook_events(root, home) == frozenset()
    (root / ".claude" / "settings.local.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [command]}]}}))
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [command]}], "Stop": [{"hooks": [{"command": "notify-send done"}]}]}})
    )
    assert ledger_hook_events(root, home) == {"SessionStart", "UserPromptSubmit"}
    (root / ".claude" / "settings.json").write_text("{not json")  # unreadable: adds nothing, takes nothing away
    assert ledger_hook_events(root, home) == {"SessionStart", "UserPromptSubmit"}
    (root / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    assert ledger_hook_events(root, home) == frozenset()
