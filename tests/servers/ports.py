"""Free loopback ports and waiting for a server to answer."""

from __future__ import annotations

import socket
import time
from typing import Callable


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that are free on 127.0.0.1 now (held open together while
    chosen, so no two are the same)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_until(ready: Callable[[], bool], *, timeout: float, what: str, alive: Callable[[], bool] = lambda: True,
               log: str | None = None) -> None:
    """Poll ``ready`` until it holds; fail with the server's log if it dies or the time runs
    out (a start-up wait, not a synchronisation between test steps)."""
    deadline = time.monotonic() + timeout

    def failure(message: str) -> RuntimeError:
        return RuntimeError(f"{what} {message}" + (f"; its log:\n{_tail(log)}" if log else ""))

    while True:
        if ready():
            return
        if not alive():
            raise failure("exited during start-up")
        if time.monotonic() > deadline:
            raise failure(f"did not answer within {timeout:.0f}s")
        time.sleep(0.1)


def _tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
