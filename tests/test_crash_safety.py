"""Acknowledged means durable: the server is killed with SIGKILL over and over while memories stream in."""

from __future__ import annotations

import json
import os
import random
import signal
from collections import Counter
from pathlib import Path

import anyio
import pytest

from .conftest import Ledger, Project, cli, connect, serve

pytestmark = pytest.mark.anyio

KILLS = 20
WRITERS = 2  # calls in flight at once, so kills land inside transactions as well as between them


def server_pid(project: Project) -> int:
    """The `project-ledger serve` process for this project (found in /proc: the client does not expose it)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in argv and str(project.root).encode() in argv:
                return int(entry.name)
    raise AssertionError("no server process found")


async def stream_until_killed(ledger: Ledger, pid: int, pending: list[str], acked: dict[str, str], rng: random.Random) -> bool:
    """Send `pending` texts (then new ones) from a few writers and SIGKILL the server at a random moment after the
    round's first acknowledged write (so every round writes something, however loaded the machine).

    A text leaves `pending` only when its call was acknowledged. Returns whether a
    call was in flight when the kill landed."""
    in_flight: set[str] = set()
    killed_mid_call = False
    before = len(acked)

    async def writer() -> None:
        while True:
            text = pending.pop(0) if pending else f"Fact {len(acked) + len(in_flight) + rng.random():.6f}: port {rng.randint(1000, 9999)}."
            in_flight.add(text)
            result = await ledger.session.call_tool("remember", {"text": text})
            assert not result.is_error, result.content
            acked[text] = result.structured_content["id"]
            in_flight.discard(text)

    async def killer() -> None:
        nonlocal killed_mid_call
        while len(acked) == before:
            await anyio.sleep(0.01)
        await anyio.sleep(rng.uniform(0.0, 1.4))
        killed_mid_call = bool(in_flight)
        os.kill(pid, signal.SIGKILL)

    try:
        async with anyio.create_task_group() as tasks:
            for _ in range(WRITERS):
                tasks.start_soon(writer)
            tasks.start_soon(killer)
    except Exception:  # noqa: BLE001 - the writers fail as the connection dies, which is the point
        pass
    pending.extend(sorted(in_flight))  # a client would retry what was never acknowledged
    return killed_mid_call


async def test_every_acknowledged_remember_survives_repeated_kill_9(project: Project) -> None:
    rng = random.Random(20261130)
    acked: dict[str, str] = {}
    pending: list[str] = []
    mid_call = 0
    for _ in range(KILLS):
        with anyio.fail_after(60):
            try:
                async with serve(project) as ledger:
                    mid_call += await stream_until_killed(ledger, server_pid(project), pending, acked, rng)
            except Exception:  # noqa: BLE001 - closing a client whose server was killed
                pass
    assert mid_call >= KILLS // 2, f"only {mid_call} of {KILLS} kills landed during a call"

    async with connect(project) as ledger:
        for text in pending:  # the retries of the last round
            acked[text] = await ledger.remember(text)
        status = await ledger.settled()
        live = sum(status["counts"].values())
        assert status["index"]["points"] == live and status["index"]["lag"] == 0
        for text in rng.sample(sorted(acked), 10):
            hits = await ledger.recall(text, k=3)
            assert hits[0]["id"] == acked[text], text

    export = cli(project, "export")
    stored = Counter(json.loads(line)["text"] for line in export.splitlines()[1:])
    assert all(stored[text] == 1 for text in acked), [text for text in acked if stored[text] != 1]
    assert max(stored.values()) == 1  # nothing is stored twice, acknowledged or not
    assert live == len(stored) >= len(acked) >= KILLS  # each round acknowledged at least one write before its kill
