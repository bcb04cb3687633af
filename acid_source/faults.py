"""Named crash points and pause points, for the fault-injection and concurrency suites.

``crash_point("commit.before_store")`` kills the current process with SIGKILL when
``$ACIDORC_CRASH_AT`` names that step, and costs one environment lookup otherwise. A new step
is one line here plus one call where it happens; the suite runs every step in :data:`STEPS`.

``pause_point("dml.before_commit")`` holds the current thread at that step when
``$ACIDORC_PAUSE_AT`` names it: a test can then make another process commit first, and so
decide which of two concurrent jobs commits later, without sleeping. The handshake goes through
two FIFOs in ``$ACIDORC_PAUSE_DIR`` that the test's :class:`PauseGate` created: the paused
process writes its pid into ``<step>.reached`` and then waits until the test writes into
``<step>.release``. Unarmed, a pause point costs one environment lookup.
"""

from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path

from . import settings

# the variables' names (declared in settings.py), for tests that arm a process
ENV = settings.CRASH_AT.name
PAUSE_ENV = settings.PAUSE_AT.name
PAUSE_DIR_ENV = settings.PAUSE_DIR.name
#: Seconds a paused process waits to be released before it gives up (TimeoutError).
PAUSE_TIMEOUT_ENV = settings.PAUSE_TIMEOUT.name
DEFAULT_PAUSE_TIMEOUT = settings.PAUSE_TIMEOUT.default

#: Every step the suite crashes at, in the order a write passes them.
STEPS = (
    "write.task.after_first_file",  # a task has moved one finished file into the table
    "write.before_commit",  # every task is done; the driver is about to commit
    "commit.before_store",  # the commit is about to reach the store
    "commit.after_store",  # the store committed; the caller has not heard back
    "abort.after_store",  # the store aborted; no file removed yet
    "abort.during_removal",  # the first directory of the aborted write id is gone
    "cleanup.after_expire",  # clean-up aborted expired transactions; nothing removed yet
    "cleanup.during_removal",  # clean-up removed its first directory
)

#: Steps a process can be paused at.
PAUSE_STEPS = (
    "dml.before_commit",  # an UPDATE / DELETE / MERGE has its snapshot and its files; not yet committed
    "dml.row_conflicts.before_store",  # a row-level DML checked its rows; its store commit comes next
    "vacuum.objectstore.marked",  # the cleaner wrote the removal marker into a directory of an object store
    "vacuum.objectstore.emptied",  # ... and deleted every other object of it; the marker is still there
    "create.marker_absent",  # creating a table on an object store: no marker there yet, none written
    "vacuum.after_removal",  # the cleaner removed a directory (each one: the first pauses)
)


def crash_point(step: str) -> None:
    if settings.CRASH_AT.get() == step:
        os.kill(os.getpid(), signal.SIGKILL)


def pause_point(step: str) -> None:
    """Wait here while a test holds ``step`` (see the module docstring)."""
    if settings.PAUSE_AT.get() == step:
        _pause(step)


def _fifos(directory: str | os.PathLike, step: str) -> tuple[Path, Path]:
    d = Path(directory)
    return d / f"{step}.reached", d / f"{step}.release"


def _pause(step: str) -> None:
    directory = settings.PAUSE_DIR.get()
    if not directory:
        raise RuntimeError(f"${PAUSE_ENV} names {step!r} but ${PAUSE_DIR_ENV} is not set")
    timeout = settings.PAUSE_TIMEOUT.get()
    reached, release = _fifos(directory, step)
    # open our end of the release FIFO first, so that the test can write into it as soon as it
    # hears we are here (a FIFO opened for reading without blocking waits for no writer)
    fd = os.open(release, os.O_RDONLY | os.O_NONBLOCK)
    try:
        out = os.open(reached, os.O_WRONLY)  # the gate keeps a reader open: never blocks for long
        try:
            os.write(out, f"{os.getpid()}\n".encode())
        finally:
            os.close(out)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"pause point {step!r}: not released within {timeout:g}s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                os.read(fd, 64)  # data, or the end of a writer that closed: released either way
                return
    finally:
        os.close(fd)


class PauseGate:
    """The test's side of a pause point: arm a process with :meth:`env`, wait until it is held
    (:meth:`wait_reached`), then let it go (:meth:`release`). Waits are bounded, and watch the
    held process's sentinel (``multiprocessing.Process.sentinel``) so a crash fails fast."""

    def __init__(self, directory: str | os.PathLike, step: str = "dml.before_commit"):
        self.directory = Path(directory)
        self.step = step
        self.directory.mkdir(parents=True, exist_ok=True)
        self._reached, self._release = _fifos(self.directory, step)
        for fifo in (self._reached, self._release):
            if not fifo.exists():
                os.mkfifo(fifo, 0o600)
        self._reader = os.open(self._reached, os.O_RDONLY | os.O_NONBLOCK)

    def env(self) -> dict[str, str]:
        """The environment variables that arm a process."""
        return {PAUSE_ENV: self.step, PAUSE_DIR_ENV: str(self.directory)}

    def wait_reached(self, timeout: float = 60.0, sentinels: tuple = ()) -> int:
        """The pid of the process that reached the step; TimeoutError when none did in
        ``timeout`` seconds, RuntimeError when a sentinel fired first (the process ended)."""
        deadline = time.monotonic() + timeout
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no process reached pause point {self.step!r} within {timeout:g}s")
            ready, _, _ = select.select([self._reader, *sentinels], [], [], left)
            if any(s in ready for s in sentinels) and self._reader not in ready:
                raise RuntimeError(f"the process to hold at {self.step!r} ended before reaching it")
            if self._reader in ready:
                chunk = os.read(self._reader, 64)
                data += chunk
                if not chunk:  # a writer closed: reopen so that the next select waits again
                    self._reopen()
        self._reopen()
        return int(data.decode().strip())

    def _reopen(self) -> None:
        os.close(self._reader)
        self._reader = os.open(self._reached, os.O_RDONLY | os.O_NONBLOCK)

    def release(self) -> None:
        """Let the held process go on (it must be held: ENXIO otherwise)."""
        fd = os.open(self._release, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, b"go\n")
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._reader >= 0:
            os.close(self._reader)
            self._reader = -1

    def __enter__(self) -> "PauseGate":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
