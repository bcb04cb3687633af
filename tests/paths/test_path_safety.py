"""Nothing a table holds or a write is given takes acidorc outside the table root.

Partition values (``..``, ``a/b``, NUL, very long, ...), table names, and symbolic links
planted in the table (as a partition directory, a delta directory, a data file or a side file,
pointing outside) can never make acidorc write or read outside the table's directory:

* a write either succeeds with every file inside the table (and the value reads back
  unchanged) or fails with a typed :class:`AcidError`, leaving nothing visible and nothing
  outside;
* a read of a table holding a link that leads outside raises :class:`UnsafePathError`: it
  neither reads through the link nor silently skips it (either would return wrong rows).

Every test has an ``outside`` directory next to the table and checks it is unchanged.
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from acid_source import clean_aborted_writes, create_table
from acid_source.errors import AcidError, UnsafePathError
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def tree(path: Path) -> dict[str, tuple]:
    """Everything below ``path`` (links not followed): relative path -> (kind, size, target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, path)
            if os.path.islink(full):
                out[rel] = ("link", 0, os.readlink(full))
            elif os.path.isdir(full):
                out[rel] = ("dir", 0, None)
            else:
                out[rel] = ("file", os.path.getsize(full), None)
    return out


class Env:
    """A partitioned table with one committed append (rows 1, 2 in partitions a, b), an empty
    directory ``outside`` next to it, and the test's own store."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.root = tmp_path / "table"
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        self.url = f"sqlite:///{tmp_path}/store.db"
        self.location = create_table(str(self.root), SCHEMA, partitionColumns=["part"],
                                     metastoreUrl=self.url).location
        self.table.append(rows([(1, "a"), (2, "b")]))
        self.committed = self.read()

    @property
    def table(self) -> AcidTable:
        return AcidTable.load(self.location, metastoreUrl=self.url)

    def read(self) -> list[tuple]:
        data = self.table.scan().toArrow()
        return sorted(zip(data.column("id").to_pylist(), data.column("part").to_pylist()),
                      key=lambda r: (r[0], str(r[1])))

    def next_write_id(self) -> int:
        return (self.table.version or 0) + 1

    def around_table(self) -> dict[str, tuple]:
        """Everything in the test directory except the table and the store's files."""
        return {k: v for k, v in tree(self.tmp).items()
                if not k.startswith(("table", "store.db"))}

    def check_failed_write(self, error: BaseException, before: dict) -> None:
        assert isinstance(error, AcidError), f"untyped error {type(error).__name__}: {error}"
        assert self.read() == self.committed, "a failed write left rows visible"
        assert self.around_table() == before, "a failed write changed files outside the table"
        assert tree(self.outside) == {}


@pytest.fixture
def env(tmp_path) -> Env:
    return Env(tmp_path)


def rows(pairs) -> pa.Table:
    return pa.table({"id": pa.array([i for i, _ in pairs], pa.int64()),
                     "part": pa.array([p for _, p in pairs], pa.string())})


# --- partition values ----------------------------------------------------------------------------

VALUES = {
    "dotdot": "..",
    "dot": ".",
    "slash": "a/b",
    "climb": "../x",
    "climb_to_outside": "../../outside/x",
    "absolute": "/tmp/x",
    "backslash": "..\\x",
    "nul": "x\0y",
    "very_long": "v" * 300,
    "hive_default_partition": "__HIVE_DEFAULT_PARTITION__",
    "escaped_dotdot": "%2E%2E",
    "percent_escape": "%41",  # a literal value, not Hive-escaped text for "A"
}


def everything_inside(env: Env) -> bool:
    """Every path below the table root resolves to a place inside it."""
    root = os.path.realpath(env.root)
    return all(os.path.realpath(env.root / p).startswith(root + os.sep) for p in tree(env.root))


@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_a_partition_value_never_leads_outside_the_table(env, value):
    """Dynamic partitioning: the value comes with the data (together with a row for an
    ordinary partition, which must share the write's fate)."""
    before = env.around_table()
    try:
        env.table.append(rows([(10, value), (11, "a")]))
    except Exception as exc:  # noqa: BLE001 - what was raised is the point of the test
        env.check_failed_write(exc, before)
        return
    assert env.around_table() == before and tree(env.outside) == {}
    new_dirs = [p for p, (kind, _, _) in tree(env.root).items() if kind == "dir" and p.startswith("part=")
                and "/" not in p and p not in ("part=a", "part=b")]
    assert len(new_dirs) == 1, f"the value {value!r} became the directories {new_dirs}, not one partition"
    assert everything_inside(env)
    # the value reads back as it was written (not as another value, not as null)
    assert env.read() == sorted(env.committed + [(10, value), (11, "a")], key=lambda r: (r[0], str(r[1])))


# DEFECT (reported to the lead; fails for hive_default_partition and percent_escape):
# acid_source/table.py _partition_spec (line 271) pastes the values of a dict unescaped into a
# Hive partition spec, which parse_static_partition then unescapes: {"part": "%41"} writes the
# value "A", {"part": "__HIVE_DEFAULT_PARTITION__"} writes NULL (and {"part": "a/b"} is refused
# as "'b' is not of the form column=value").
@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_a_static_partition_value_never_leads_outside_the_table(env, value):
    """Static partitioning: the value comes from the ``partition`` argument."""
    before = env.around_table()
    try:
        env.table.overwrite(pa.table({"id": pa.array([10], pa.int64())}), partition={"part": value})
    except Exception as exc:  # noqa: BLE001
        env.check_failed_write(exc, before)
        return
    assert env.around_table() == before and tree(env.outside) == {}
    assert everything_inside(env)
    assert env.read() == sorted(env.committed + [(10, value)], key=lambda r: (r[0], str(r[1])))


# --- table names -----------------------------------------------------------------------------------

NAMES = {"climb": "../x", "slash": "a/b", "dotdot": "..", "absolute": "/etc/passwd", "nul": "x\0y",
         "very_long": "n" * 300, "db_climb": "db/../../t", "escaped_dotdot": "%2e%2e"}


# DEFECT (reported to the lead; fails for climb, slash, absolute, db_climb): a name with a '/'
# is accepted (acid_source/metastore/tableinfo.py normalize_name refuses only ':' and '$'), but
# acid_source/table.py AcidTable.load (line 51) takes any text with '/' for a location, so
# AcidTable.load("../x") opens the directory ../x - here another table - instead of the table
# registered under that name, or fails with TableLocationNotFoundError / NotAnAcidTableError.
@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_a_table_name_is_never_a_path(tmp_path, name, monkeypatch):
    """A name is looked up in the store, never used as a path: creating a table under it
    touches only the table's location, and loading by it opens that table (or the name is
    refused with a typed error)."""
    cwd = tmp_path / "cwd"  # "../x" from here is the decoy table below
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    url = f"sqlite:///{tmp_path}/store.db"
    decoy = tmp_path / "x"  # what "../x" means relative to the working directory
    create_table(str(decoy), SCHEMA, metastoreUrl=url)
    AcidTable.load(str(decoy), metastoreUrl=url).append(rows([(99, "decoy")]))
    before = {k: v for k, v in tree(tmp_path).items() if not k.startswith(("store.db", "named"))}
    try:
        info = create_table(str(tmp_path / "named"), SCHEMA, name=name, metastoreUrl=url)
    except Exception as exc:  # noqa: BLE001
        assert isinstance(exc, AcidError), f"untyped error {type(exc).__name__}: {exc}"
        return
    after = {k: v for k, v in tree(tmp_path).items() if not k.startswith(("store.db", "named"))}
    assert after == before, "creating a table changed files outside its location"
    loaded = AcidTable.load(info.name, metastoreUrl=url)
    assert loaded.location == info.location, (
        f"AcidTable.load({info.name!r}) opened {loaded.location}, not the table registered under that name "
        f"at {info.location}")
    assert loaded.scan().toArrow().num_rows == 0


# --- links planted in the table ----------------------------------------------------------------------

def _copy_partition(env: Env, part: str, dest: Path) -> None:
    shutil.copytree(env.root / f"part={part}", dest)


# DEFECT (reported to the lead; this test and the next fail): acid_source/storage.py
# Storage.list_dir (line 75) marks a symbolic link as not a directory (fsspec's local ls gives a
# link the type "other"), so acid_source/layout/table_dirs.py discover_layout (line 57) never
# checks it: a partition directory linked outside is silently skipped (its rows are missing),
# a delta directory linked outside is taken for a pre-ACID file (CorruptFileError).
@pytest.mark.parametrize("populated", [False, True], ids=["empty_target", "target_holds_a_partition"])
def test_a_read_refuses_a_partition_directory_linked_outside(env, populated):
    target = env.outside / "elsewhere"
    if populated:  # a whole valid partition outside: reading through the link would return its rows
        _copy_partition(env, "a", target)
    else:
        target.mkdir()
    os.symlink(target, env.root / "part=c")
    with pytest.raises(UnsafePathError):
        env.read()


def test_a_read_refuses_a_delta_directory_linked_outside(env):
    delta = glob.glob(f"{env.root}/part=a/delta_*")[0]
    moved = env.outside / "delta"
    shutil.move(delta, moved)
    os.symlink(moved, delta)
    with pytest.raises(UnsafePathError):
        env.read()


def test_a_read_refuses_a_data_file_linked_outside(env):
    delta = glob.glob(f"{env.root}/part=a/delta_*")[0]
    shutil.copy(f"{delta}/bucket_00000", env.outside / "stolen")
    os.symlink(env.outside / "stolen", f"{delta}/bucket_00001")
    with pytest.raises(UnsafePathError):
        env.read()


def test_a_write_refuses_a_partition_directory_linked_outside(env):
    os.symlink(env.outside, env.root / "part=c")
    before = env.around_table()
    with pytest.raises(UnsafePathError) as caught:
        env.table.append(rows([(10, "c"), (11, "a")]))
    os.unlink(env.root / "part=c")  # so that the table can be read again
    env.check_failed_write(caught.value, before)


def _plant_in_next_delta(env: Env, name: str | None, target: Path) -> str:
    """A link inside (or, name None: as) the directory the next append writes to part=a."""
    w = env.next_write_id()
    delta = env.root / "part=a" / f"delta_{w:07d}_{w:07d}_0000"
    if name is None:
        os.symlink(target, delta)
        return str(delta)
    delta.mkdir()
    os.symlink(target, delta / name)
    return str(delta / name)


def test_a_write_refuses_its_delta_directory_linked_outside(env):
    link = _plant_in_next_delta(env, None, env.outside)
    before = env.around_table()
    with pytest.raises(UnsafePathError):
        env.table.append(rows([(10, "a"), (11, "b")]))
    assert tree(env.outside) == {} and env.around_table() == before
    os.unlink(link)
    assert env.read() == env.committed


# DEFECT (reported to the lead; fails for dangling-_orc_acid_version): acid_source/storage.py
# Storage.write_if_absent (line 97) follows a link - exists() is False for a dangling one, then
# open("wb") creates its target outside the table. acid_source/write/task.py (line 171) and
# acid_source/write/job.py (line 86) call it after checking only the directory.
@pytest.mark.parametrize("name", ["_orc_acid_version", "bucket_00000"])
@pytest.mark.parametrize("target_exists", [False, True], ids=["dangling", "existing"])
def test_a_write_never_writes_through_a_file_linked_outside(env, name, target_exists):
    """A link planted where the write puts a file: the write must not follow it (refusing is
    fine, replacing the link by a real file inside the table is fine)."""
    victim = env.outside / "victim"
    if target_exists:
        victim.write_bytes(b"precious")
    _plant_in_next_delta(env, name, victim)
    before = env.around_table()
    try:
        env.table.append(rows([(10, "a")]))
    except Exception as exc:  # noqa: BLE001
        assert isinstance(exc, AcidError), f"untyped error {type(exc).__name__}: {exc}"
    assert env.around_table() == before, f"the write wrote through the link {name} to {victim}"
    if target_exists:
        assert victim.read_bytes() == b"precious"


def test_clean_up_never_removes_files_outside_the_table(env):
    """An aborted write's delta directory replaced by a link to a directory outside: clean-up
    may refuse or drop the link, never delete what it points to."""
    staged = AcidTable.load(env.location, metastoreUrl=env.url).newWrite(mode="append")
    task = staged.writer(0)
    task.write(pa.RecordBatch.from_pydict({"id": pa.array([5], pa.int64()), "part": ["a"]}))
    task.close()
    Metastore(env.url).abort(staged.txnId)  # in the store only: the files stay, as after a crash
    delta = glob.glob(f"{env.root}/part=a/delta_{staged.writeId:07d}_*")[0]
    shutil.move(delta, env.outside / "aborted")
    os.symlink(env.outside / "aborted", delta)
    before = tree(env.outside)
    try:
        clean_aborted_writes(env.location, metastoreUrl=env.url, expireAfterSeconds=0)
    except Exception as exc:  # noqa: BLE001
        assert isinstance(exc, AcidError), f"untyped error {type(exc).__name__}: {exc}"
    assert tree(env.outside) == before
