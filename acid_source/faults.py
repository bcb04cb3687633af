"""Named crash points for the fault-injection suite (tests/faults/).

``crash_point("commit.before_store")`` kills the current process with SIGKILL when
``$ACIDORC_CRASH_AT`` names that step, and costs one environment lookup otherwise. A new step
is one line here plus one call where it happens; the suite runs every step in :data:`STEPS`.
"""

from __future__ import annotations

import os
import signal

ENV = "ACIDORC_CRASH_AT"

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


def crash_point(step: str) -> None:
    if os.environ.get(ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
