"""What a client's hook adapter tells the ledger (`ClientHooks`), and the pieces of input checking and configuration
that several clients share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from project_ledger.hooks.event import HookEvent, HookInputError


class ClientHooks(ABC):
    """One client's hooks: how an event arrives and its answer goes back, where the event's project is, and the
    block of the client's configuration that runs the ledger's hook.

    An adapter reads the input its client documents; anything else is a `HookInputError` naming what is wrong."""

    name: ClassVar[str]  # the command line's word for it: `hook NAME`, `config NAME --hooks`
    events: ClassVar[tuple[str, ...]]  # the client's own events that the ledger's hook is configured for
    injects: ClassVar[bool]  # whether its prompt hook can hand the agent context (memories)
    keeps_start_pack: ClassVar[bool] = False  # whether its session-start pack is kept for the next start (`start_pack`)
    shared_file: ClassVar[bool] = False  # whether `config NAME --hooks --shared` writes a file shared with the team
    help: ClassVar[str]  # `hook NAME --help`

    @property
    def mark(self) -> str:
        """What every command of the ledger's hook for this client holds, which tells it from the user's own hooks."""
        return f"project_ledger hook {self.name}"

    # `here` is the folder the hook process runs in: where the project is, for a client whose input names no folder.

    @abstractmethod
    def parse(self, payload: Any, here: Path) -> HookEvent:
        """The event in the decoded JSON input `payload`."""

    @abstractmethod
    def folder(self, payload: Any, here: str) -> str | None:
        """The folder the event's project is found from, read without checking the rest of the input (the hook's
        short way reads it before anything is parsed); None when the input lacks it."""

    @abstractmethod
    def render(self, event: HookEvent, context: str | None) -> str:
        """What the hook prints for `event`, given the context the ledger has for the agent (or None)."""

    def log_name(self, payload: dict[str, Any]) -> str:
        """The event as the hooks log names it."""
        return f"{self.name}/{payload['hook_event_name']}"

    def start_of(self, payload: Any) -> tuple[str, str | None] | None:
        """The session and its source (startup, resume, clear) when `payload` starts a session that a kept
        session-start pack may answer (not after a compaction), read without checking the rest of the input; None for
        anything else."""
        return None

    @abstractmethod
    def config_file(self, root: Path, shared: bool = False) -> Path:
        """The file of the project at `root` that `config NAME --hooks` merges the hooks into."""

    def config_files(self, root: Path) -> tuple[Path, ...]:
        """Every file `config NAME --hooks` may have written (`uninstall` looks in each)."""
        return (self.config_file(root),)

    def new_config(self) -> dict[str, Any]:
        """The hooks file's document before any hook is in it."""
        return {}

    @abstractmethod
    def config_entries(self, command: str) -> dict[str, list[Any]]:
        """The entries, per event, that run `command` (the ledger's hook) under the file's `hooks` key."""

    @abstractmethod
    def is_ours(self, entry: Any) -> bool:
        """Whether an entry of the file's `hooks` lists is the ledger's."""

    def hooked_events(self, document: Any) -> set[str]:
        """The events of a hooks file's decoded `document` that run the ledger's hook; none when it is not the
        documented shape."""
        hooks = document.get("hooks") if isinstance(document, dict) else None
        if not isinstance(hooks, dict):
            return set()
        return {event for event, entries in hooks.items() if isinstance(entries, list) and any(map(self.is_ours, entries))}

    def config_block(self, command: str) -> dict[str, Any]:
        """The whole document `config NAME --hooks` prints: the ledger's entries in a file of their own."""
        return {**self.new_config(), "hooks": self.config_entries(command)}


def input_object(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise HookInputError(f"hook input must be a JSON object, not {type(payload).__name__}")
    return payload


def handled_event(payload: dict[str, Any], key: str, events: tuple[str, ...], title: str) -> str:
    """The event `payload[key]` names, one of `events` (those the ledger's hook is configured for)."""
    name = payload.get(key)
    if not isinstance(name, str) or name not in events:
        raise HookInputError(f"{title} hook event {name!r} is not handled; configure the ledger's hook for {', '.join(events)}")
    return name


def required_text(payload: dict[str, Any], key: str) -> str:
    """`payload[key]`, a non-empty string."""
    value = payload.get(key)
    if not isinstance(value, str) or not value.strip():
        raise HookInputError(f"hook input field {key!r} must be a non-empty string")
    return value


def optional_text(payload: dict[str, Any], key: str) -> str | None:
    """`payload[key]`, a string if there is one."""
    value = payload.get(key)
    if value is not None and not isinstance(value, str):
        raise HookInputError(f"hook input field {key!r} must be a non-empty string")
    return value


# Claude Code's shape of a hooks file, which Codex reads too: per event, groups of commands (a group may have a
# `matcher`; none matches every occurrence of the event).


def command_groups(events: tuple[str, ...], command: str, timeout: int) -> dict[str, list[Any]]:
    return {event: [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}] for event in events}


def entry_runs(entry: Any, mark: str) -> bool:
    """Whether a hooks-file entry that is one command (Cursor's, Windsurf's) has a command line containing `mark`."""
    return isinstance(entry, dict) and mark in str(entry.get("command", ""))


def group_runs(group: Any, mark: str) -> bool:
    """Whether a group of commands holds one whose command line contains `mark`."""
    commands = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(commands, list) and any(entry_runs(command, mark) for command in commands)
