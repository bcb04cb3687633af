"""A process killed (SIGKILL) at every named crash point never corrupts a table.

For each step in ``acid_source.faults.STEPS`` (a new step there is a new case here), a child
process runs the operation that passes the step, with ``$ACIDORC_CRASH_AT`` naming it, and must
die there. Afterwards:

(a) readers see exactly the rows of the transactions the store says committed (the test's
    model), each transaction whole or not at all: the interrupted write only when it died
    after the store committed it (``commit.after_store``);
(b) ``clean_aborted_writes(expire_after_seconds=0)`` removes every directory of a write id
    that will never commit, and nothing a committed write id needs; then a new append works.

The table is partitioned and every transaction has two tasks writing every partition, so a
transaction spans several directories and files.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import crash_ops
import pytest
import worker_context

from acid_source import clean_aborted_writes, create_table
from acid_source.faults import ENV as CRASH_ENV
from acid_source.faults import STEPS
from acid_source.layout.names import parse_dir_name
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

# Which operation passes a step, by the step's prefix (a step of a new kind needs a line here).
OPERATIONS = {"write.": "append", "commit.": "append", "abort.": "failing_append", "cleanup.": "clean"}

SETUP_APPENDS = 3


def operation_for(step: str) -> str:
    for prefix, operation in OPERATIONS.items():
        if step.startswith(prefix):
            return operation
    pytest.fail(f"no operation of this suite passes crash point {step!r}: add its prefix to OPERATIONS")


class Table:
    """A partitioned table with committed history, and the test's model of it."""

    def __init__(self, tmp_path: Path, url: str):
        self.tmp = tmp_path
        self.location = str(tmp_path / "table")
        self.url = url  # a fresh store: a SQLite file or a PostgreSQL store (``store_url``)
        self.info = create_table(self.location, crash_ops.SCHEMA, partitionColumns=["part"],
                                 metastoreUrl=self.url)
        self.root = Path(self.info.location)
        self.tags: dict[int, str] = {}  # write id -> tag of every write the test started
        for i in range(SETUP_APPENDS):
            self.append(f"setup-{i}")

    @property
    def store(self) -> Metastore:
        return Metastore(self.url)

    def append(self, tag: str) -> None:
        info = crash_ops.append(self.location, self.url, tag)
        self.tags[info["write_id"]] = tag

    def run_child(self, operation: str, tag: str, crash_at: str) -> dict | None:
        """Run ``operation`` in a child process that must die by SIGKILL at ``crash_at``;
        returns what it recorded about its transaction (None for a clean-up)."""
        info_file = self.tmp / f"{tag}.json"
        staging = self.tmp / "staging"  # the child's local task files (SIGKILL skips their removal)
        staging.mkdir(exist_ok=True)
        env = {**os.environ, CRASH_ENV: crash_at, "ACIDORC_METASTORE_URL": self.url, "TMPDIR": str(staging)}
        log = self.tmp / f"{tag}.log"
        # forked from the forkserver, acidorc already imported: a process of its own all the same
        proc = worker_context.forkserver().Process(
            target=crash_ops.run_in_child,
            args=([operation, self.location, self.url, tag, str(info_file)], env, str(log)), daemon=True)
        proc.start()
        proc.join(120)
        if proc.exitcode is None:
            proc.kill()
            proc.join()
            pytest.fail(f"{operation} did not finish within 120s:\n{log.read_text(errors='replace')}")
        assert proc.exitcode == -signal.SIGKILL, (
            f"{operation} did not die at crash point {crash_at!r} (exit code {proc.exitcode}); the "
            f"operation never reaches that step, or failed before it:\n{log.read_text(errors='replace')}")
        if operation == "clean":
            return None
        info = json.loads(info_file.read_text())
        self.tags[info["write_id"]] = info["tag"]
        return info

    # --- what the store says and what readers see -------------------------------------------
    def committed(self) -> dict[int, list[str]]:
        """Committed write id -> partitions it touched, from the store's history."""
        return {h["write_id"]: h["touched"] for h in self.store.history(self.info.table_id)}

    def expected_rows(self) -> list[tuple]:
        committed = self.committed()
        unknown = set(committed) - set(self.tags)
        assert not unknown, f"the store says write ids {sorted(unknown)} committed, which no write of this test had"
        return sorted(row for w in committed for row in crash_ops.expected_rows(self.tags[w]))

    def read_rows(self) -> list[tuple]:
        data = AcidTable.load(self.location, metastoreUrl=self.url).scan().toArrow()
        return sorted(zip(data.column("id").to_pylist(), data.column("tag").to_pylist(),
                          data.column("part").to_pylist()))

    def check_reads(self) -> list[tuple]:
        """(a): readers see the committed transactions exactly, each whole or not at all."""
        seen = self.read_rows()
        per_tag: dict[str, int] = {}
        for _, tag, _ in seen:
            per_tag[tag] = per_tag.get(tag, 0) + 1
        whole = len(crash_ops.expected_rows("x"))
        torn = {tag: n for tag, n in per_tag.items() if n != whole}
        assert not torn, f"partial transactions visible (rows per tag; a whole one has {whole}): {torn}"
        assert seen == self.expected_rows()
        return seen

    # --- directories ---------------------------------------------------------------------------
    def write_id_dirs(self) -> set[str]:
        """Every base / delta directory in the table, relative to its root."""
        found = set()
        for dirpath, dirnames, _ in os.walk(self.root):
            for name in dirnames:
                if parse_dir_name(name) is not None:
                    found.add(os.path.relpath(os.path.join(dirpath, name), self.root))
        return found

    def needed_dirs(self) -> set[str]:
        """The directories the committed history needs (appends of tasks < 4096: statement 0)."""
        return {os.path.join(p, f"delta_{w:07d}_{w:07d}_0000") if p else f"delta_{w:07d}_{w:07d}_0000"
                for w, parts in self.committed().items() for p in parts}

    def files_under(self, dirs: set[str]) -> dict[str, int]:
        """path -> size of every file inside ``dirs``."""
        out = {}
        for d in dirs:
            for entry in os.scandir(self.root / d):
                out[os.path.join(d, entry.name)] = entry.stat(follow_symlinks=False).st_size
        return out


@pytest.mark.parametrize("step", STEPS)
def test_a_process_killed_at_a_crash_point_leaves_the_table_consistent(tmp_path, store_url, step):
    """On each store backend (``store_url``: SQLite, PostgreSQL)."""
    table = Table(tmp_path, store_url)
    operation = operation_for(step)
    before_rows = table.check_reads()
    committed_before = table.committed()
    committed_files = table.files_under(table.needed_dirs())
    assert len(committed_before) == SETUP_APPENDS and len(before_rows) == SETUP_APPENDS * len(crash_ops.expected_rows("x"))  # noqa: E501

    orphan = None
    if operation == "clean":  # something for the clean-up to do: the files of a driver that died
        orphan = table.run_child("append", "orphan", crash_at="write.before_commit")
        assert table.store.txn_state(orphan["txn_id"]) == "open"
    interrupted = table.run_child(operation, "crashed", crash_at=step)

    # --- the store's word on the interrupted transaction ---------------------------------------
    if operation == "clean":
        assert table.store.txn_state(orphan["txn_id"]) == "aborted"  # both steps follow the expiry
    else:
        state = table.store.txn_state(interrupted["txn_id"])
        expected_state = {"append": "committed" if step == "commit.after_store" else "open",
                          "failing_append": "aborted"}[operation]
        assert state == expected_state, f"transaction {interrupted['txn_id']} is {state} after a crash at {step}"

    # --- (a) readers see the committed history exactly ------------------------------------------
    seen = table.check_reads()
    crashed_visible = any(tag == "crashed" for _, tag, _ in seen)
    assert crashed_visible == (step == "commit.after_store"), (
        f"after a crash at {step} the interrupted write's rows are {'visible' if crashed_visible else 'missing'}")
    assert not any(tag == "orphan" for _, tag, _ in seen)
    needed = table.needed_dirs()
    assert set(committed_before).issubset(table.committed())
    assert needed <= table.write_id_dirs(), f"directories of committed writes are missing: {needed - table.write_id_dirs()}"  # noqa: E501

    # --- (b) clean-up removes every orphan directory and nothing else ----------------------------
    orphans = table.write_id_dirs() - needed
    assert bool(orphans) == (step != "commit.after_store"), f"directories not needed by committed writes: {orphans}"
    report = clean_aborted_writes(table.location, metastoreUrl=table.url, expireAfterSeconds=0)
    assert sorted(os.path.relpath(p, table.root) for p in report.removed) == sorted(orphans)
    assert table.write_id_dirs() == needed
    after_files = table.files_under(needed)
    assert {p: s for p, s in after_files.items() if p in committed_files} == committed_files
    assert set(committed_files) <= set(after_files), "clean-up removed files of committed writes"
    assert table.check_reads() == seen

    # a crash never blocks the next write
    table.append("after")
    final = table.check_reads()
    assert sum(1 for _, tag, _ in final if tag == "after") == len(crash_ops.expected_rows("after"))
    assert clean_aborted_writes(table.location, metastoreUrl=table.url, expireAfterSeconds=0).removed == []
