"""Keeping an open transaction alive from the driver side, never from executors.

A transaction whose heartbeats stop for longer than the expiry is presumed dead and may be
aborted by anyone's clean-up. Two carriers:

* :class:`HeartbeatThread` - a daemon thread in the process that opened the transaction
  (plain Python use of :class:`~acid_source.txn.Transaction`).
* :func:`spawn_heartbeat_process` - a small detached process for Spark writes: the transaction
  is opened in a short-lived Python planning worker, so a thread there would die with it. The
  process beats until the transaction is no longer open, or until the process it watches (the
  Spark driver's JVM) is gone, so a dead driver's transaction still expires.

The store URL reaches the child through its standard input, never its command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from . import settings

ENV_INTERVAL = settings.HEARTBEAT_SECONDS.name
DEFAULT_INTERVAL = settings.HEARTBEAT_SECONDS.default


def heartbeat_interval(metastore=None) -> float:
    """Seconds between heartbeats: ``$ACIDORC_HEARTBEAT_SECONDS`` or 30 (the default expiry
    used by clean-up is 600 s, twenty missed beats); shorter when the store times transactions
    out sooner itself (a Hive Metastore with a short ``hive.txn.timeout``: half of it, as Hive's
    own clients beat)."""
    interval = settings.HEARTBEAT_SECONDS.get()
    timeout = None if metastore is None else metastore.txn_timeout_seconds()
    if timeout is not None:
        interval = min(interval, timeout / 2)
    return interval


def _beat(metastore, txn_id: int) -> bool:
    """One heartbeat; False once the transaction is no longer open (stop beating)."""
    from .errors import MetastoreError, TransactionStateError

    try:
        metastore.heartbeat(txn_id)
        return True
    except TransactionStateError:
        return False
    except MetastoreError:
        return True  # the store is unreachable for now: try again at the next beat


class HeartbeatThread:
    """Heartbeats ``txn_id`` every ``interval`` seconds until stopped or the transaction ends."""

    def __init__(self, metastore, txn_id: int, interval: float | None = None):
        self._metastore = metastore
        self._txn_id = txn_id
        self._interval = interval or heartbeat_interval(metastore)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"acidorc-heartbeat-{txn_id}", daemon=True)

    def start(self) -> "HeartbeatThread":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            if not _beat(self._metastore, self._txn_id):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)


def _driver_pid() -> int:
    """The Spark driver's JVM: the nearest ancestor process named ``java`` (Linux), else the
    parent process."""
    pid = os.getppid()
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "java":
                    return pid
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if ppid <= 1:
            break
        pid = ppid
    return os.getppid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def spawn_heartbeat_process(url: str, txn_id: int, *, watch_pid: int | None = None,
                            interval: float | None = None) -> subprocess.Popen:
    """Start a detached process that heartbeats ``txn_id`` while ``watch_pid`` (default: the
    Spark driver JVM) lives and the transaction is open."""
    watch = watch_pid if watch_pid is not None else _driver_pid()
    proc = subprocess.Popen(
        [sys.executable, "-m", "acid_source.heartbeat", str(txn_id), str(watch), str(interval or heartbeat_interval())],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(url.encode("utf-8"))
    proc.stdin.close()
    return proc


def _main(argv: list[str]) -> int:
    from .metastore import connect

    txn_id, watch_pid, interval = int(argv[0]), int(argv[1]), float(argv[2])
    url = sys.stdin.read()
    metastore = connect(url)
    poll = min(1.0, interval)
    next_beat = time.monotonic() + interval
    while _alive(watch_pid):
        time.sleep(poll)  # a watchdog's tick, not synchronization
        if time.monotonic() >= next_beat:
            if not _beat(metastore, txn_id):
                return 0
            next_beat = time.monotonic() + interval
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
