"""`history`, `pin`, `unpin` and `forget` from the shell: the same calls the agent's tools make."""

from __future__ import annotations

import click

from project_ledger.cli.access_commands import audit_local
from project_ledger.cli.support import ledger_errors, opened, project_options
from project_ledger.cli.terminal import say, say_json
from project_ledger.config import Settings
from project_ledger.memory.context_sections import render_memory
from project_ledger.text.wording import plural


@click.command()
@click.argument("memory_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the chain as JSON.")
@project_options
@ledger_errors
def history(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Every version of memory ID, oldest first: how a decision changed.

    \b
    Example:
      project-ledger history m3k0c9x2ab1 --json
    """
    with opened(settings) as ledger:
        result = ledger.history(memory_id)
    if as_json:
        say_json(result.model_dump_json(indent=2))
        return
    say("\n\n".join(render_memory(memory) for memory in result.chain))
    say(f"({plural(len(result.chain), 'version')}; current: {result.current})", err=True)


def pin_command(name: str, pinned: bool, summary: str) -> click.Command:
    """`pin` or `unpin`: the same call with the flag set either way."""

    @click.command(name, help=f"{summary}\n\n\b\nExample:\n  project-ledger {name} m3k0c9x2ab1")
    @click.argument("memory_id", metavar="ID")
    @project_options
    @ledger_errors
    def command(settings: Settings, memory_id: str) -> None:
        with opened(settings) as ledger:
            (ledger.pin if pinned else ledger.unpin)(memory_id)
        audit_local(settings, name, [memory_id])
        say(f"{name}ned {memory_id}")

    return command


pin = pin_command("pin", True, "Pin memory ID: it is shown at the start of every session.")
unpin = pin_command("unpin", False, "Unpin memory ID.")


@click.command()
@click.argument("memory_id", metavar="ID")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@project_options
@ledger_errors
def forget(settings: Settings, memory_id: str, yes: bool) -> None:
    """Erase memory ID's text for good, with what was captured from it and gists that quote it.

    Only a tombstone stays. A running server drops it from its index within a second.

    \b
    Examples:
      project-ledger forget m3k0c9x2ab1
      project-ledger forget m3k0c9x2ab1 --yes
    """
    with opened(settings) as ledger:
        preview = ledger.browsing.forget_preview(memory_id)
        if preview.memory.deleted_at is not None:
            say(f"{memory_id} was already forgotten")
            return
        if not yes:
            say(render_memory(preview.memory), err=True)
            if preview.also:
                count = plural(len(preview.also), "memory", "memories")
                say(f"\nErased with it, {count} derived from it:", err=True)
                say("\n".join(render_memory(memory) for memory in preview.also), err=True)
            click.confirm(f"\nErase {memory_id} for good? This cannot be undone", abort=True, err=True)
        result = ledger.forget(memory_id)
    audit_local(settings, "forget", [memory_id, *result.also_forgotten])
    also = f"; also erased: {', '.join(result.also_forgotten)}" if result.also_forgotten else ""
    say(f"forgot {memory_id}{also}")
