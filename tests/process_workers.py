"""Spawned worker processes that run a test's commands over a pipe, one at a time.

Starting a process costs more than most tests, so a module-scoped :class:`Pool` keeps two
workers and hands them to each test (``healthy()`` replaces one a failed test left busy or dead);
they fork from the forkserver of ``worker_context`` (acidorc already imported) and take the test
process's environment as it is when they start.
A workers module (``compaction_workers``, ``conflict_workers``) holds the commands, a dict
``COMMANDS`` of name -> function, and a module-level ``def serve(conn): process_workers.serve(conn,
COMMANDS)``: the new process gets a target it can unpickle by name.

A command is (name, keyword arguments, environment); the environment (a pause point's arming)
holds for that one command. Every command gets the pipe as its first argument, so it may talk to
the test before it answers (``("held", ...)``, then wait for "go"). The answer is ("ok", value)
or ("error", the exception), a RuntimeError with its traceback when the exception does not pickle.
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import multiprocessing.connection
import os
import pickle
import traceback
from collections.abc import Callable, Mapping

import pytest
import worker_context

WAIT = 90.0  # bound of every wait on another process (a safety net, not a synchronization)


# --- in the worker -----------------------------------------------------------------------------
def picklable(exc: BaseException) -> BaseException:
    """``exc`` if it can cross the pipe, else a RuntimeError carrying its traceback."""
    try:
        pickle.dumps(exc)
        return exc
    except Exception:
        return RuntimeError("".join(traceback.format_exception(exc)))


def serve(conn, commands: Mapping[str, Callable]) -> None:
    """Run ``commands[name](conn, **kwargs)`` for each message until None arrives."""
    while True:
        message = conn.recv()
        if message is None:
            return
        name, kwargs, env = message
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            answer = ("ok", commands[name](conn, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the test
            answer = ("error", picklable(exc))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        conn.send(answer)


def serve_with_environment(conn, target: Callable, environment: dict[str, str]) -> None:
    """``target(conn)`` with ``environment`` as the whole environment: a child of the forkserver
    starts with the server's, which is older than the test's."""
    os.environ.clear()
    os.environ.update(environment)
    target(conn)


# --- in the test -------------------------------------------------------------------------------
class Worker:
    """A process running ``target(conn)`` (a workers module's ``serve``)."""

    def __init__(self, ctx, target: Callable):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=target, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.busy = False

    def send(self, name: str, env: dict | None = None, **kwargs) -> None:
        """Start command ``name``; pause points time out after WAIT unless ``env`` says otherwise."""
        assert not self.busy
        self.conn.send((name, kwargs, {"ACIDORC_PAUSE_TIMEOUT": str(WAIT), **(env or {})}))
        self.busy = True

    def receive(self) -> tuple:
        """The worker's next message: its answer, or something the command sends before it."""
        ready = mp.connection.wait([self.conn, self.process.sentinel], WAIT)
        if self.conn in ready:
            return self.conn.recv()
        pytest.fail("the worker died" if ready else f"the worker did not answer within {WAIT:.0f}s")

    def answer(self) -> tuple:
        """The running command's (status, value); the worker is free again."""
        status, value = self.receive()
        assert status in ("ok", "error"), (status, value)
        self.busy = False
        return status, value

    def call(self, name: str, **kwargs):
        """Run a command to its end: its value, or its exception raised here."""
        self.send(name, **kwargs)
        status, value = self.answer()
        if status == "error":
            raise value
        return value

    def close(self) -> None:
        if self.process.is_alive() and not self.busy:
            try:
                self.conn.send(None)
            except OSError:  # it died meanwhile
                pass
            self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class Pool:
    """Two workers serving ``target``, kept across a module's tests."""

    def __init__(self, target: Callable):
        self.ctx = worker_context.forkserver()
        self.target = target
        self.workers = [self._start(), self._start()]

    def _start(self) -> Worker:
        return Worker(self.ctx, functools.partial(serve_with_environment, target=self.target,
                                                  environment=dict(os.environ)))

    def healthy(self) -> tuple[Worker, Worker]:
        """Two idle workers (one a failed test left busy or dead is replaced)."""
        for i, w in enumerate(self.workers):
            if w.busy or not w.process.is_alive():
                w.process.kill()
                w.process.join()
                self.workers[i] = self._start()
        return self.workers[0], self.workers[1]

    def close(self) -> None:
        for w in self.workers:
            w.close()
