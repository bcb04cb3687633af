"""Whole-suite scheduling (pytest-xdist ``--dist loadfile``): a file goes, where it can, to the
worker that already runs the servers and JVMs it needs.

Every worker starts a session fixture's server or JVM the first time one of its files asks for
it: a SparkSession (~20 s with its first queries), a Hive metastore (~7 s), Hive 4's JVM, ... A
file that needs something only the other worker has started would start a second copy, so
while other files are left the scheduler hands it to that worker (or a file that needs nothing
new) instead; otherwise it keeps the collection order (longest first, tests/conftest.py).

The workers know which fixtures each file uses, the controller only the test ids: each worker
writes ``{file: [resources]}`` after its collection into a directory the controller made and
reads before it hands out the first file (xdist schedules once every worker has collected).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

#: session fixtures that start a server or a JVM in the worker that first uses them
RESOURCES = ("spark", "spark_cluster", "hive_metastore", "hive_metastore_short_timeout", "hive4", "hive23",
             "s3_server", "postgres_server")
_KEY = "acidorc_resources_dir"


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def configure(config: pytest.Config) -> None:
    """Controller: the directory the workers report to (removed by :func:`unconfigure`), and
    xdist's hooks (registered here: they are unknown without xdist)."""
    if _is_controller(config) and config.pluginmanager.hasplugin("xdist"):
        config.stash[_dir_key] = Path(tempfile.mkdtemp(prefix="acidorc-xdist-"))
        config.pluginmanager.register(_XdistHooks(), "acidorc-scheduling")


class _XdistHooks:
    @staticmethod
    def pytest_configure_node(node) -> None:
        configure_node(node)

    @staticmethod
    def pytest_xdist_make_scheduler(config, log):
        return make_scheduler(config, log)


def unconfigure(config: pytest.Config) -> None:
    directory = config.stash.get(_dir_key, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def configure_node(node) -> None:
    """Controller, per worker: tell it where to report."""
    directory = node.config.stash.get(_dir_key, None)
    if directory is not None:
        node.workerinput[_KEY] = str(directory)


def report_collection(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker: which resources each collected file uses."""
    directory = getattr(config, "workerinput", {}).get(_KEY)
    if directory is None:
        return
    uses: dict[str, set[str]] = {}
    for item in items:
        uses.setdefault(file_of(item.nodeid), set()).update(r for r in RESOURCES if r in item.fixturenames)
    target = Path(directory) / f"{config.workerinput['workerid']}.json"
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps({f: sorted(r) for f, r in uses.items()}))
    os.replace(tmp, target)


def make_scheduler(config: pytest.Config, log):
    directory = config.stash.get(_dir_key, None)
    if directory is None or config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    if not callable(getattr(LoadFileScheduling, "_assign_work_unit", None)):
        return None  # xdist's internals moved (they are private): its own scheduling, unchanged

    class ResourceAwareScheduling(LoadFileScheduling):
        """LoadFileScheduling that picks, of the files left, the first whose resources this
        node has or the other nodes have not started (else the first)."""

        def __init__(self, config, log=None):
            super().__init__(config, log)
            self.uses: dict[str, set[str]] | None = None
            self.started: dict = {}

        def _assign_work_unit(self, node) -> None:
            if self.uses is None:
                self.uses = {}
                for report in directory.glob("*.json"):
                    for f, resources in json.loads(report.read_text()).items():
                        self.uses.setdefault(f, set()).update(resources)
            mine = self.started.setdefault(node, set())
            others = set().union(*(r for n, r in self.started.items() if n is not node))
            chosen = next((scope for scope in self.workqueue
                           if not (self.uses.get(file_of(scope), set()) - mine) & others), None)
            if chosen is not None:
                self.workqueue.move_to_end(chosen, last=False)  # the base class takes the first
            mine.update(self.uses.get(file_of(next(iter(self.workqueue))), set()))
            super()._assign_work_unit(node)

    return ResourceAwareScheduling(config, log)


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


_dir_key = pytest.StashKey[Path]()
