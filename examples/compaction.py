"""Compaction: many small writes make many directories; minor and major compaction fold them
into one, the cleaner removes what no reader needs, and the rows never change.

Runs without Spark (AcidTable, pyarrow); with ``AcidTable.forPath(spark, path)`` the same
calls run as Spark jobs. Run it with ``./scripts/run-example`` or ``python examples/compaction.py``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa


def directories(path: str) -> list[str]:
    return sorted(d for _, dirs, _ in os.walk(path) for d in dirs if d.startswith(("base_", "delta_", "delete_")))


def run(root: Path) -> dict:
    """The whole example in directory ``root``; returns what it observed."""
    from acid_source import AcidTable, create_table

    path = str(root / "events")
    create_table(path, pa.schema([("id", pa.int64()), ("kind", pa.string())]))
    events = AcidTable.load(path)
    for i in range(12):  # twelve small appends: twelve delta directories
        events.append(pa.table({"id": pa.array([2 * i, 2 * i + 1], pa.int64()), "kind": ["view", "click"]}))
    events.delete("id % 5 = 0")  # and a delete delta
    before = sorted(events.toArrow().column("id").to_pylist())
    print(f"{len(directories(path))} directories before compaction:", directories(path)[:3], "...")

    minor = events.compact("minor")
    print("minor compaction:", minor["numInputDirs"], "directories ->", minor["outputDirs"])
    major = events.compact("major")
    print("major compaction:", major["numInputRows"], "rows in,", major["numOutputRows"], "out ->",
          major["outputDirs"])
    assert sorted(events.toArrow().column("id").to_pylist()) == before  # the rows never change

    print("the cleaner would remove:", events.vacuum(dryRun=True, retentionSeconds=0)["numRemovedPaths"],
          "directories")
    cleaned = events.vacuum(retentionSeconds=0)  # default retention (300 s) keeps recent snapshots readable
    print("after vacuum:", directories(path))
    return {"before": before, "after": sorted(events.toArrow().column("id").to_pylist()),
            "directories": directories(path), "removed": cleaned["numRemovedPaths"]}


def main() -> None:
    store = tempfile.mkdtemp(prefix="acidorc-compaction-")  # keep the example out of ~/.acidorc
    os.environ["ACIDORC_METASTORE_URL"] = f"sqlite:///{store}/metastore.db"
    os.environ.setdefault("ACIDORC_AUTO_COMPACT", "false")  # compact by hand here, to show each step
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run(Path(tmp))
    finally:
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
