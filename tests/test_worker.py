"""The background-worker pattern, in process: start and stop, wake, back-off, pause on disk faults, opening, status.

Nothing here measures time. Each test drives the worker's rounds and waits on
events and semaphores with a generous timeout, which only a hung worker reaches.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field

import pytest

from project_ledger.errors import StorageError
from project_ledger.search.index import DiskNearlyFull
from project_ledger.worker import Backoff, Opening, RunAgain, Worker

WAIT = 30.0  # seconds; reached only if the worker hangs
NEVER = 3600.0  # a back-off or retry interval no test waits out


@dataclass(frozen=True)
class RecordingBackoff(Backoff):
    """A back-off that remembers each failure count it was asked about."""

    asked: list[int] = field(default_factory=list)

    def delay(self, failures: int) -> float:
        self.asked.append(failures)
        return super().delay(failures)


class Driven:
    """A worker whose one step the test drives: each round begins, then waits for the outcome the test gives it."""

    def __init__(self, backoff: Backoff, events: list[str] | None = None) -> None:
        self.began = threading.Semaphore(0)
        self.outcomes: queue.SimpleQueue[Exception | None] = queue.SimpleQueue()
        self.closing = threading.Event()
        self.worker = Worker(f"test-driven-{id(self)}", [self.step], poll_seconds=None, backoff=backoff, events=events)

    def step(self) -> None:
        if self.closing.is_set():
            return
        self.began.release()
        outcome = self.outcomes.get(timeout=WAIT)
        if outcome is not None:
            raise outcome

    def start(self) -> None:
        self.worker.start()
        assert self.began.acquire(timeout=WAIT)

    def end_round(self, outcome: Exception | None) -> None:
        """End the running round with `outcome` (None: success) and wake the worker; return once the next round has
        begun, by when the worker has booked this one."""
        self.outcomes.put(outcome)
        self.worker.wake()
        assert self.began.acquire(timeout=WAIT)

    def stop(self) -> None:
        self.closing.set()
        self.outcomes.put(None)
        self.worker.stop(timeout=WAIT)


def thread_alive(name: str) -> bool:
    return any(thread.name == name for thread in threading.enumerate())


def test_a_worker_runs_a_round_at_start_and_one_more_each_time_it_is_woken() -> None:
    rounds = threading.Semaphore(0)

    def step() -> None:
        rounds.release()

    worker = Worker("test-wake", [step], poll_seconds=None)
    assert worker.status().state == "off"
    worker.start()
    worker.start()  # a second start does nothing
    assert rounds.acquire(timeout=WAIT)
    assert worker.status().state == "running"
    for _ in range(3):
        worker.wake()
        assert rounds.acquire(timeout=WAIT)
    worker.stop(timeout=WAIT)
    assert worker.status().state == "off" and not thread_alive("test-wake")
    worker.start()  # a stopped worker stays stopped
    assert not thread_alive("test-wake")


def test_a_step_asking_to_run_again_gets_a_round_without_a_wake() -> None:
    left = [3, 2, 1]
    done = threading.Event()

    def step() -> RunAgain | None:
        left.pop()
        if left:
            return RunAgain()
        done.set()
        return None

    worker = Worker("test-again", [step], poll_seconds=None)
    worker.start()
    try:
        assert done.wait(WAIT) and left == []
    finally:
        worker.stop(timeout=WAIT)


def test_a_failing_step_neither_kills_the_loop_nor_starves_the_steps_after_it() -> None:
    later_rounds = threading.Semaphore(0)
    failures: list[int] = []

    def broken() -> None:
        failures.append(1)
        raise RuntimeError("broken on purpose")

    def later() -> None:
        later_rounds.release()

    # No wakes and no poll: only the back-off brings the next round.
    worker = Worker("test-broken", [broken, later], poll_seconds=None, backoff=Backoff(first=0.001, cap=0.001))
    worker.start()
    try:
        for _ in range(3):
            assert later_rounds.acquire(timeout=WAIT)
        status = worker.status()
        assert status.state == "running" and status.error == "RuntimeError: broken on purpose"
        assert len(failures) >= 3
    finally:
        worker.stop(timeout=WAIT)


def test_back_off_doubles_from_first_up_to_the_cap() -> None:
    backoff = Backoff(first=1.0, cap=30.0)
    assert [backoff.delay(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert backoff.delay(100_000) == 30.0  # no overflow however long it fails


def test_back_off_restarts_after_a_successful_round_and_a_wake_cuts_it_short() -> None:
    backoff = RecordingBackoff(first=NEVER, cap=NEVER)  # every failed round is ended early by the test's wake
    driven = Driven(backoff)
    driven.start()
    try:
        driven.end_round(RuntimeError("one"))
        driven.end_round(RuntimeError("two"))
        assert driven.worker.status().error == "RuntimeError: two"
        driven.end_round(None)
        assert driven.worker.status().error is None
        driven.end_round(RuntimeError("three"))
        assert backoff.asked == [1, 2, 1]
    finally:
        driven.stop()


@pytest.mark.parametrize("fault", [StorageError("the disk is full"), DiskNearlyFull("2 MB left")], ids=["storage", "index"])
def test_a_disk_fault_pauses_with_one_event_and_a_whole_good_round_resumes(fault: Exception) -> None:
    history = ["index opened"]
    backoff = RecordingBackoff(first=NEVER, cap=NEVER)
    driven = Driven(backoff, events=history)
    driven.start()
    try:
        for _ in range(3):  # logged and recorded once, not once a round
            driven.end_round(fault)
        status = driven.worker.status()
        assert status.state == "paused" and status.error == str(fault)
        assert history == ["index opened", f"background writes paused: {fault}"]
        driven.end_round(None)
        status = driven.worker.status()
        assert status.state == "running" and status.error is None
        assert status.events == ("index opened", f"background writes paused: {fault}", "background writes resumed")
        assert backoff.asked == []  # waiting for the disk is not a failure: no back-off
    finally:
        driven.stop()


def test_an_opening_is_retried_until_it_works_then_the_rounds_begin() -> None:
    attempts: list[int] = []
    closes: list[int] = []
    loaded: list[int] = []
    rounds_after: list[int] = []  # how many open attempts each round came after
    rounds = threading.Semaphore(0)

    def open_() -> None:
        attempts.append(1)
        if len(attempts) < 3:
            raise OSError(f"attempt {len(attempts)} failed")

    def step() -> None:
        rounds_after.append(len(attempts))
        rounds.release()

    worker = Worker(
        "test-open",
        [step],
        poll_seconds=None,
        opening=Opening(
            open=open_,
            close=lambda: closes.append(1),
            what="open the test index",
            retry_seconds=0.001,
            then=lambda: loaded.append(len(attempts)),
        ),
    )
    worker.start()
    assert worker.wait_opened(WAIT)
    assert rounds.acquire(timeout=WAIT)
    assert rounds_after == [3]  # no round before the open succeeded
    assert worker.open_error is None and worker.status().state == "running"
    assert loaded == [1]  # once, right after the first attempt, though that one failed
    assert len(closes) == 2  # after each failed attempt
    worker.stop(timeout=WAIT)
    assert len(closes) == 3  # and at stop


def test_an_opening_that_is_not_retried_leaves_the_worker_failed_with_the_reason() -> None:
    closes: list[int] = []

    def open_() -> None:
        raise OSError("inotify watch limit reached")

    worker = Worker(
        "test-open-once",
        [lambda: None],
        poll_seconds=None,
        opening=Opening(open=open_, close=lambda: closes.append(1), what="start", retry_seconds=None),
    )
    assert not worker.wait_opened(0)
    assert not worker.open_now()
    assert worker.wait_opened(0)
    status = worker.status()
    assert status.state == "failed" and status.error == "OSError: inotify watch limit reached"
    assert worker.open_error == status.error and closes == [1]
    worker.stop(timeout=WAIT)
    assert worker.status().state == "off"


def test_stopping_a_draining_worker_finishes_what_is_queued() -> None:
    queued = ["a", "b", "c"]
    done: list[str] = []

    def step() -> RunAgain | None:
        if queued:
            done.append(queued.pop(0))
        return RunAgain() if queued else None

    worker = Worker("test-drain", [step], poll_seconds=None, drain=True)
    worker.start()
    worker.stop(timeout=WAIT)  # however far it got before the stop, it finishes the queue
    assert done == ["a", "b", "c"] and not thread_alive("test-drain")
