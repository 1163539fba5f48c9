"""One background thread pattern for every loop that keeps something caught up: open, rounds, wake, back-off, pause.

The index catch-up, the code search shard, the file watcher's re-indexing and
the background gists each run a daemon thread that does a round of work, then
waits for a wake-up or a poll interval. They share the hard parts, which live
here once:

- **open with retry**: a worker that needs something opened first (an index, a
  file watch) retries at a fixed interval, not on every wake: a write must not
  trigger an open attempt (and an error in the log) each time. Readers can wait
  for the first attempt, and learn why it failed.
- **one failing step does not starve the others**: each step of a round is
  isolated; a failed round is logged and the worker backs off (doubling, up to a
  cap, reset on success), so an idle worker with a broken step does not log a
  traceback every second. A wake cuts the wait short: work someone just asked
  for is tried at once.
- **pause on disk faults**: a full or read-only disk is a condition to wait out,
  not a failure. It is recorded as one event when it starts and one when a whole
  round succeeds again (and logged once each), not every second, and the worker
  keeps its usual rhythm so it resumes promptly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from project_ledger.errors import StorageError
from project_ledger.search.index import DiskNearlyFull

log = logging.getLogger(__name__)

# Every worker writes to the data directory; these say the disk is full or read-only, for now.
DISK_FAULTS: tuple[type[Exception], ...] = (DiskNearlyFull, StorageError)

WorkerState = Literal["running", "paused", "failed", "off"]


@dataclass(frozen=True)
class Backoff:
    """How long a worker waits after consecutive failed rounds: `first`, doubled each time, at most `cap`."""

    first: float
    cap: float

    def delay(self, failures: int) -> float:
        """The wait after `failures` failed rounds in a row (at least one)."""
        # Past 2**32 the cap has long taken over; bounding the exponent keeps the float from overflowing.
        return min(self.first * 2.0 ** min(failures - 1, 32), self.cap)


DEFAULT_BACKOFF = Backoff(first=1.0, cap=60.0)


@dataclass(frozen=True)
class RunAgain:
    """A step's answer when more work is waiting: run the next round within `seconds` (0: at once), not after the
    worker's usual wait."""

    seconds: float = 0.0


Step = Callable[[], RunAgain | None]


@dataclass(frozen=True)
class Opening:
    """What a worker opens before its rounds begin, and how it retries.

    `open` makes one attempt and raises if it failed; `close` releases whatever
    it made, whole or half (it runs after each failed attempt, and at stop).
    `retry_seconds` is the fixed interval between attempts (None: a failed open
    is final). A failure is logged as "could not {what} ({error}); {meanwhile}",
    where `meanwhile` says what happens now (by default, the retry interval).
    `then` runs once in the thread right after its first attempt, whatever the
    outcome: slow work that must not hold up the open, such as loading a model.
    """

    open: Callable[[], None]
    close: Callable[[], None]
    what: str
    retry_seconds: float | None
    meanwhile: str = ""
    then: Callable[[], None] | None = None


@dataclass(frozen=True)
class WorkerStatus:
    """`off`: not started, or stopped. `failed`: could not open. `paused`: waiting for the disk. `error`: why it could
    not open, or what the latest round failed on (None once a round succeeds)."""

    state: WorkerState
    error: str | None
    events: tuple[str, ...]


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Worker:
    """A daemon thread that runs `steps` in rounds: after each round it waits `poll_seconds` (None: until woken), less
    if a step asks to run again, or the back-off after a failed round; `wake` cuts any of these waits short.

    With `drain`, stopping first finishes the queued work (rounds run while a step asks to run again at once), for
    queues whose items would otherwise be lost.
    """

    def __init__(
        self,
        name: str,
        steps: Sequence[Step],
        *,
        poll_seconds: float | None,
        backoff: Backoff = DEFAULT_BACKOFF,
        opening: Opening | None = None,
        events: list[str] | None = None,
        drain: bool = False,
    ) -> None:
        self.name = name
        self._steps = tuple(steps)
        self._poll_seconds = poll_seconds
        self._backoff = backoff
        self._opening = opening
        self.events = events if events is not None else []  # the owner may share its own list, to report one history
        self._drain = drain
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._attempted = threading.Event()  # the first open attempt is over (at once when nothing is to be opened)
        self._is_open = opening is None
        self._open_error: str | None = None
        self._error: str | None = None
        self._failures = 0
        self._paused = False
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if opening is None:
            self._attempted.set()

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start the thread; returns at once. Later calls do nothing (so an owner may start it lazily, on every
        submit), and neither does a call after `stop`: a worker is not restartable."""
        with self._start_lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stop after the current step, waiting at most `timeout` seconds for the thread, then close what was opened."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        if self._opening is not None:
            self._opening.close()

    def wake(self) -> None:
        """There is new work: run a round now (or as soon as the current one ends)."""
        self._wake.set()

    def open_now(self) -> bool:
        """One open attempt in the calling thread (the CLI's way, or to know at once whether it works); whether it did."""
        assert self._opening is not None
        return self._attempt_open(self._opening)

    def wait_opened(self, timeout: float) -> bool:
        """Wait until the first open attempt is over, for at most `timeout` seconds. It may have failed: see `open_error`."""
        return self._attempted.wait(timeout)

    @property
    def open_error(self) -> str | None:
        """Why the latest open attempt failed; None once open."""
        return self._open_error

    @property
    def stopping(self) -> bool:
        """For a long step to end early at stop."""
        return self._stop.is_set()

    def status(self) -> WorkerStatus:
        thread = self._thread
        state: WorkerState
        if self._stop.is_set():
            state = "off"
        elif self._open_error is not None:
            state = "failed"
        elif thread is None or not thread.is_alive():
            state = "off"
        else:
            state = "paused" if self._paused else "running"
        return WorkerStatus(state=state, error=self._open_error or self._error, events=tuple(self.events))

    # -- the thread ----------------------------------------------------------------

    def _run(self) -> None:
        if self._opening is not None and not self._open_with_retry(self._opening):
            return
        while not self._stop.is_set():
            wait = self._round()
            if wait != 0:
                self._wake.wait(wait)
                self._wake.clear()
        if self._drain:
            while self._round() == 0:  # a step asked to run again at once: there is more queued
                pass

    def _open_with_retry(self, opening: Opening) -> bool:
        opened = self._is_open or self._attempt_open(opening)
        if opening.then is not None:
            opening.then()
        while not opened:
            if opening.retry_seconds is None or self._stop.wait(opening.retry_seconds):
                return False
            opened = self._attempt_open(opening)
        return True

    def _attempt_open(self, opening: Opening) -> bool:
        try:
            opening.open()
        except Exception as exc:  # noqa: BLE001 - whatever stops it opening is logged, reported by status, and retried
            self._open_error = _describe(exc)
            retrying = f"retrying every {opening.retry_seconds:.0f}s" if opening.retry_seconds is not None else "not retrying"
            log.error("could not %s (%s); %s", opening.what, self._open_error, opening.meanwhile or retrying)
            opening.close()  # give back what was half made before the retry
        else:
            self._is_open, self._open_error = True, None
        finally:
            self._attempted.set()
        return self._is_open

    def _round(self) -> float | None:
        """Run every step once; how long to wait before the next round (0: at once, None: until woken)."""
        fault: str | None = None
        failed: str | None = None
        asked: list[float] = []
        for step in self._steps:
            try:
                again = step()
            except DISK_FAULTS as exc:  # a full or read-only disk: wait for it, quietly
                fault = str(exc)
            except Exception as exc:  # one failing step must not starve the others
                failed = _describe(exc)
                log.exception("%s: %s failed; backing off (a wake retries at once)", self.name, getattr(step, "__name__", step))
            else:
                if again is not None:
                    asked.append(again.seconds)
        self._pause(fault)
        self._error = failed or fault
        if failed is not None:
            self._failures += 1
            return self._backoff.delay(self._failures)
        self._failures = 0
        return min(asked) if asked else self._poll_seconds

    def _pause(self, reason: str | None) -> None:
        """Record when background writes start waiting for the disk (`reason`), and when a whole round succeeds again."""
        if (reason is not None) == self._paused:
            return
        self._paused = reason is not None
        self.events.append(f"background writes paused: {reason}" if reason is not None else "background writes resumed")
        log.warning(self.events[-1])
