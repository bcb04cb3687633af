"""The examples run as the README shows them (the upsert example against the suite's session)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_upsert_example(spark, tmp_path, capsys):
    final = load("upsert").run(spark, tmp_path)
    # by hand: bob moved (then deleted by the new-domain DELETE), cy deleted, eve inserted, dee upper-cased
    assert final == [(1, "ann@example.com", "FR"), (4, "DEE@EXAMPLE.COM", "DE"), (5, "eve@example.com", "FR")]
    out = capsys.readouterr().out
    assert "'numUpdatedRows': 1, 'numDeletedRows': 1, 'numInsertedRows': 1" in out


def test_compaction_example(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")
    seen = load("compaction").run(tmp_path)
    expected = [i for i in range(24) if i % 5 != 0]  # 12 appends of two ids, then DELETE id % 5 = 0
    assert seen["before"] == expected and seen["after"] == expected
    assert len(seen["directories"]) == 1 and seen["directories"][0].startswith("base_0000013_v")
    assert seen["removed"] == 13 + 2  # the 13 original deltas and the two minor outputs the base superseded


def test_streaming_example(spark, tmp_path, capsys):
    seen = load("streaming").run(spark, tmp_path)
    # by hand: transactions of 3 ids from 0 and from 100, the second of each run aborted
    assert seen["copied"] == [0, 1, 2, 6, 7, 8, 100, 101, 102]
    assert seen["changes"] == [("delete", 7, "/p3"), ("insert", 7, "/checkout")]
    assert "Copied by the stream: [0, 1, 2, 6, 7, 8, 100, 101, 102]" in capsys.readouterr().out
