"""Property tests: random sequences of appends, DELETEs, UPDATEs and MERGEs against a literal
model on plain Python rows.

Each example creates one table (unpartitioned, partitioned by ``p``, bucketed by ``b``, or
both) and runs a random program on it. The model is a list of dicts; conditions and SET / VALUES
expressions come from a small grammar that renders each node twice: as Spark SQL text for
acidorc, and as a Python function with Spark SQL's three-valued logic (a comparison with NULL is
NULL, a NULL condition matches nothing). MERGE follows Spark SQL's definition literally
(clauses in order, the first whose condition is true acts; the cardinality rule). After every
step:

* ``AcidTable.load(p).toArrow()`` equals the model (as a multiset of rows);
* the metrics (rows deleted / updated / inserted, write id, partitions) equal the model's;
* rows the step did not touch keep their ROW__ID, new row versions carry the step's write id;
* the step added files only in the partitions it touched, delete files only for the writer ids
  of the rows it deleted and (bucketed tables) insert files only for the buckets of the new
  rows, each computed here with Hive's bucketing_version=2 hash; every row sits in its bucket;
* a step that matched nothing (or failed) left the table's files exactly as they were.

At the end of each example Spark's ``spark.read.format("acidorc")`` reads the same rows.

Two layers: the engine-free API (``AcidTable.load(p).delete/update``) with more examples, and
the Spark API (``AcidTable.forPath(spark, p)``, with MERGE) with a few. Set
ACIDORC_PROPERTY_EXAMPLES to run more examples than the CI default.
"""

from __future__ import annotations

import operator
import os
import re
import shutil
import struct
import tempfile
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from core_read import rows_with_row_ids
from hypothesis import event, given, note
from hypothesis import strategies as st
from properties import examples

import acid_source
from acid_source.errors import MergeCardinalityError
from acid_source.table import AcidTable

# --- the table -------------------------------------------------------------------------------
COLUMNS = ("id", "a", "s", "b", "p")  # partition column p last, as acidorc orders it
INT_COLS = ("id", "a", "b")
STR_COLS = ("s", "p")
SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("s", pa.string()), ("b", pa.int32()),
                    ("p", pa.string())])
SPARK_DDL = "id bigint, a int, s string, b int, p string"
NUM_BUCKETS = 3
KINDS = ("plain", "partitioned", "bucketed", "bucketed_partitioned")
STRINGS = ("x", "y", "q=1")  # 'q=1' needs escaping in a partition directory name


def partitioned(kind: str) -> bool:
    return kind in ("partitioned", "bucketed_partitioned")


def bucketed(kind: str) -> bool:
    return kind in ("bucketed", "bucketed_partitioned")


def create(kind: str) -> str:
    root = tempfile.mkdtemp(prefix="acidorc-dmlprop-")
    path = os.path.join(root, "t")
    acid_source.create_table(path, SCHEMA, partitionColumns=["p"] if partitioned(kind) else [],
                             bucketColumns=["b"] if bucketed(kind) else [],
                             numBuckets=NUM_BUCKETS if bucketed(kind) else 0)
    return path


# --- independent Hive facts: partition directory names, bucketing_version=2 ------------------
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 0x20)}


def partition_dir(kind: str, value: str | None) -> str:
    """Hive's directory of partition ``p=value`` (FileUtils.escapePathName), '' unpartitioned."""
    if not partitioned(kind):
        return ""
    if value is None:
        return "p=__HIVE_DEFAULT_PARTITION__"
    return "p=" + "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def hive_bucket(value: int | None) -> int:
    """Hive 3's bucket of an INT (ObjectInspectorUtils.hashCodeMurmur: Murmur3.hash32 of the
    big-endian bytes, seed 104729; NULL hashes to 0), then (hash & MAX_INT) % buckets."""
    if value is None:
        h = 0
    else:
        (k,) = struct.unpack("<I", struct.pack(">i", value))
        k = _rotl((k * 0xCC9E2D51) & _M32, 15) * 0x1B873593 & _M32
        h = (_rotl(104729 ^ k, 13) * 5 + 0xE6546B64) & _M32
        h ^= 4
        h ^= h >> 16
        h = (h * 0x85EBCA6B) & _M32
        h ^= h >> 13
        h = (h * 0xC2B2AE35) & _M32
        h ^= h >> 16
    return (h & 0x7FFFFFFF) % NUM_BUCKETS


def writer_of(row_id: tuple) -> int:
    """The writer (bucket) id packed in a V1 bucket property (HIVE_ACID_FORMAT: BucketCodec)."""
    return (row_id[2] >> 16) & 0xFFF


# --- the expression grammar: SQL text and Python (three-valued) semantics of each node --------
_OPS = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge}


def sql(node) -> str:
    kind = node[0]
    if kind == "lit":
        v = node[1]
        return "NULL" if v is None else (f"'{v}'" if isinstance(v, str) else str(v))
    if kind == "col":
        _, qual, name, upper = node
        name = name.upper() if upper else name
        return f"{qual}.{name}" if qual else name
    if kind == "cmp":
        return f"({sql(node[2])} {node[1]} {sql(node[3])})"
    if kind == "nse":
        return f"({sql(node[1])} <=> {sql(node[2])})"
    if kind == "isnull":
        return f"({sql(node[1])} IS {'NOT ' if node[2] else ''}NULL)"
    if kind == "in":
        return f"({sql(node[1])} {'NOT ' if node[3] else ''}IN ({', '.join(sql(x) for x in node[2])}))"
    if kind in ("and", "or"):
        return f"({sql(node[1])} {kind.upper()} {sql(node[2])})"
    if kind == "not":
        return f"(NOT {sql(node[1])})"
    if kind == "plus":
        return f"({sql(node[1])} + {node[2]})"
    if kind == "coalesce":
        return f"coalesce({sql(node[1])}, {sql(node[2])})"
    if kind == "concat":
        return f"({sql(node[1])} || {sql(node[2])})"
    if kind == "upper":
        return f"upper({sql(node[1])})"
    if kind == "case":
        return f"(CASE WHEN {sql(node[1])} THEN {sql(node[2])} ELSE {sql(node[3])} END)"
    raise AssertionError(node)


def ev(node, env):
    """Spark SQL's value of ``node`` on ``env`` ({(qualifier, column): value}); None is NULL."""
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "col":
        return env[(node[1], node[2])]
    if kind == "cmp":
        left, right = ev(node[2], env), ev(node[3], env)
        return None if left is None or right is None else _OPS[node[1]](left, right)
    if kind == "nse":
        return ev(node[1], env) == ev(node[2], env)
    if kind == "isnull":
        return (ev(node[1], env) is None) != node[2]
    if kind == "in":
        v = ev(node[1], env)
        if v is None:
            return None
        items = [ev(x, env) for x in node[2]]
        found = True if v in [x for x in items if x is not None] else (None if None in items else False)
        return found if not node[3] or found is None else not found
    if kind == "and":
        left, right = ev(node[1], env), ev(node[2], env)
        if left is False or right is False:
            return False
        return None if left is None or right is None else True
    if kind == "or":
        left, right = ev(node[1], env), ev(node[2], env)
        if left is True or right is True:
            return True
        return None if left is None or right is None else False
    if kind == "not":
        v = ev(node[1], env)
        return None if v is None else not v
    if kind == "plus":
        v = ev(node[1], env)
        return None if v is None else v + node[2]
    if kind == "coalesce":
        v = ev(node[1], env)
        return ev(node[2], env) if v is None else v
    if kind == "concat":
        left, right = ev(node[1], env), ev(node[2], env)
        return None if left is None or right is None else left + right
    if kind == "upper":
        v = ev(node[1], env)
        return None if v is None else v.upper()
    if kind == "case":
        return ev(node[2], env) if ev(node[1], env) is True else ev(node[3], env)
    raise AssertionError(node)


def holds(cond, env) -> bool:
    """A WHERE / WHEN condition: only TRUE matches (NULL does not)."""
    return cond is None or ev(cond, env) is True


def env_of(row: dict, qual: str | None) -> dict:
    return {(qual, c): row[c] for c in COLUMNS}


# --- strategies --------------------------------------------------------------------------------
int_values = st.one_of(st.none(), st.integers(-3, 6))
str_values = st.one_of(st.none(), st.sampled_from(STRINGS))


def rows_strategy(max_size: int, ids=st.integers(0, 9), unique: bool = False):
    row = st.fixed_dictionaries({"id": ids, "a": int_values, "s": str_values, "b": int_values, "p": str_values})
    return st.lists(row, min_size=1, max_size=max_size, unique_by=(lambda r: r["id"]) if unique else None)


@st.composite
def column_ref(draw, quals, typ):
    return ("col", draw(st.sampled_from(quals)), draw(st.sampled_from(INT_COLS if typ == "int" else STR_COLS)),
            draw(st.booleans()))


@st.composite
def literal(draw, typ, nullable=False):
    values = st.integers(-3, 6) if typ == "int" else st.sampled_from(STRINGS)
    if nullable:
        values = st.one_of(st.none(), values)
    return ("lit", draw(values))


@st.composite
def atom(draw, quals):
    typ = draw(st.sampled_from(["int", "str"]))
    ref = draw(column_ref(quals, typ))
    shape = draw(st.sampled_from(["cmp", "cmp", "cmpcol", "nse", "isnull", "in"]))
    if shape == "cmp":
        return ("cmp", draw(st.sampled_from(sorted(_OPS))), ref, draw(literal(typ)))
    if shape == "cmpcol":
        return ("cmp", draw(st.sampled_from(sorted(_OPS))), ref, draw(column_ref(quals, typ)))
    if shape == "nse":
        return ("nse", ref, draw(st.one_of(literal(typ, nullable=True), column_ref(quals, typ))))
    if shape == "isnull":
        return ("isnull", ref, draw(st.booleans()))
    return ("in", ref, draw(st.lists(literal(typ, nullable=True), min_size=1, max_size=3)), draw(st.booleans()))


def conditions(quals, depth: int = 2):
    base = atom(quals)
    if depth == 0:
        return base
    sub = conditions(quals, depth - 1)
    return st.one_of(base, base,
                     st.tuples(st.just("and"), sub, sub), st.tuples(st.just("or"), sub, sub),
                     st.tuples(st.just("not"), sub))


@st.composite
def value_expr(draw, quals, typ):
    """A SET / VALUES expression of type ``typ`` over the columns of ``quals``."""
    shape = draw(st.sampled_from(["lit", "null", "col", "col", "fn", "case"]))
    if shape == "lit":
        return draw(literal(typ))
    if shape == "null":
        return ("lit", None)
    if shape == "col":
        return draw(column_ref(quals, typ))
    if shape == "fn":
        ref = draw(column_ref(quals, typ))
        if typ == "int":
            return draw(st.sampled_from([("plus", ref, 1), ("plus", ref, -2), ("coalesce", ref, ("lit", 0))]))
        return draw(st.sampled_from([("upper", ref), ("concat", ref, ("lit", "_")), ("coalesce", ref, ("lit", "y"))]))
    return ("case", draw(atom(quals)), draw(literal(typ, nullable=True)), draw(column_ref(quals, typ)))


def col_type(column: str) -> str:
    return "int" if column in INT_COLS else "str"


@st.composite
def assignments(draw, quals, columns=("id", "a", "s", "b", "p")):
    chosen = draw(st.lists(st.sampled_from(columns), min_size=1, max_size=3, unique=True))
    return {c: draw(value_expr(quals, col_type(c))) for c in chosen}


@st.composite
def delete_step(draw, quals=(None,)):
    return ("delete", draw(st.one_of(conditions(quals), conditions(quals), st.none())))


@st.composite
def update_step(draw, quals=(None,)):
    cond = draw(st.one_of(conditions(quals), conditions(quals), st.none()))
    mover = draw(st.sampled_from(["p", "b", "any"]))  # often move rows between partitions / buckets
    sets = draw(assignments(quals))
    if mover != "any" and mover not in sets:
        sets[mover] = draw(value_expr(quals, col_type(mover)))
    return ("update", cond, sets)


@st.composite
def append_step(draw):
    return ("append", draw(rows_strategy(6)))


@st.composite
def merge_clause(draw, when, last):
    """One clause; only the last clause of its kind may be unconditional (Spark's rule)."""
    quals = {"matched": ("t", "s"), "not_matched": ("s",), "not_matched_by_source": ("t",)}[when]
    cond = draw(conditions(quals, 1)) if not last else draw(st.one_of(st.none(), conditions(quals, 1)))
    if when == "not_matched":
        action = draw(st.sampled_from(["insert", "insertAll"]))
    else:
        action = draw(st.sampled_from(["update", "delete"] + (["updateAll"] if when == "matched" else [])))
    values = None
    if action in ("update", "insert"):
        values = draw(assignments(quals))
    return (when, action, cond, values)


@st.composite
def merge_step(draw):
    if draw(st.integers(0, 3)) > 0:  # unique keys, some matching no target row
        source = draw(rows_strategy(5, st.integers(0, 12), unique=True))
    else:  # keys that collide: the cardinality rule
        source = draw(rows_strategy(5, st.integers(0, 3)))
    extra = draw(st.one_of(st.none(), st.none(), atom(("t", "s"))))
    clauses = []
    for when in ("matched", "not_matched", "not_matched_by_source"):
        n = draw(st.integers(0, 2))
        clauses += [draw(merge_clause(when, i == n - 1)) for i in range(n)]
    if not clauses:
        clauses = [("matched", "delete", None, None)]
    order = draw(st.permutations(range(len(clauses))))
    # keep the relative order within one kind (that order is the semantics), interleave kinds
    by_kind: dict[str, list] = {}
    for c in clauses:
        by_kind.setdefault(c[0], []).append(c)
    kinds = [clauses[i][0] for i in order]
    ordered = [by_kind[k].pop(0) for k in kinds]
    return ("merge", source, extra, ordered)


# Every program starts from these rows (then draws its steps): even Hypothesis's first, simplest
# example then has NULLs in every column, every partition, duplicate ids and several buckets.
INITIAL = [
    {"id": 0, "a": 1, "s": "x", "b": 1, "p": "x"},
    {"id": 1, "a": None, "s": None, "b": None, "p": None},
    {"id": 2, "a": 3, "s": "q=1", "b": 2, "p": "q=1"},
    {"id": 2, "a": -1, "s": "y", "b": 5, "p": "x"},
    {"id": 3, "a": 0, "s": None, "b": -3, "p": "y"},
    {"id": 4, "a": 4, "s": "x", "b": None, "p": None},
    {"id": 5, "a": None, "s": "y", "b": 6, "p": "y"},
]


@st.composite
def programs(draw, with_spark: bool, min_steps: int, max_steps: int):
    choices = [update_step(), delete_step(), update_step(), append_step()]
    if with_spark:
        choices = [merge_step(), update_step(), merge_step(), delete_step(), append_step()]
    return [("append", INITIAL)] + draw(st.lists(st.one_of(*choices), min_size=min_steps, max_size=max_steps))


def describe(step) -> str:
    if step[0] == "append":
        return f"append {step[1]}"
    if step[0] == "delete":
        return f"delete where {None if step[1] is None else sql(step[1])}"
    if step[0] == "update":
        return (f"update where {None if step[1] is None else sql(step[1])} "
                f"set {({k: sql(v) for k, v in step[2].items()})}")
    _, source, extra, clauses = step
    return (f"merge source={source} on t.id = s.id{'' if extra is None else ' AND ' + sql(extra)} clauses="
            + "; ".join(f"{w} {a} if {None if c is None else sql(c)} "
                        f"{None if v is None else {k: sql(x) for k, x in v.items()}}" for w, a, c, v in clauses))


# --- the model -------------------------------------------------------------------------------
@dataclass
class MRow:
    values: dict
    row_id: tuple | None = None  # (partition dir, *ROW__ID), known once read back after its step


@dataclass
class Outcome:
    """What a step did according to the model."""

    rows: list  # the table after the step
    deleted: list = field(default_factory=list)  # MRows removed (DELETE or the old half of UPDATE)
    updated: int = 0
    inserted: list = field(default_factory=list)  # new row values (UPDATE's new half, INSERT)
    num_deleted: int = 0
    num_inserted: int = 0
    cardinality_error: bool = False


def model_delete(rows, cond) -> Outcome:
    gone = [r for r in rows if holds(cond, env_of(r.values, None))]
    return Outcome([r for r in rows if not any(r is g for g in gone)], deleted=gone, num_deleted=len(gone))


def assign(values: dict, sets: dict, env) -> dict:
    new = dict(values)
    for column, expr in sets.items():
        new[column] = ev(expr, env)
    return new


def model_update(rows, cond, sets) -> Outcome:
    hit = [r for r in rows if holds(cond, env_of(r.values, None))]
    new = [assign(r.values, sets, env_of(r.values, None)) for r in hit]
    kept = [r for r in rows if not any(r is h for h in hit)]
    return Outcome(kept + [MRow(v) for v in new], deleted=hit, updated=len(hit), inserted=new)


def model_merge(rows, source, extra, clauses) -> Outcome:
    """Spark SQL MERGE, literally: join on ``t.id = s.id [AND extra]``, then per row the first
    clause of its kind whose condition is TRUE."""
    def on(t, s):
        env = {**env_of(t.values, "t"), **env_of(s, "s")}
        key = None if t.values["id"] is None or s["id"] is None else t.values["id"] == s["id"]
        return (key is True) and (extra is None or ev(extra, env) is True)

    matched = [c for c in clauses if c[0] == "matched"]
    check = bool(matched) and not (len(matched) == 1 and matched[0][1] == "delete" and matched[0][2] is None)
    matches = {id(t): [s for s in source if on(t, s)] for t in rows}
    if check and any(len(m) > 1 for m in matches.values()):
        return Outcome(rows, cardinality_error=True)
    out = Outcome([])
    for t in rows:
        action = None
        for s in matches[id(t)]:  # several only for the lone unconditional DELETE
            env = {**env_of(t.values, "t"), **env_of(s, "s")}
            action = next((c for c in clauses if c[0] == "matched" and holds(c[2], env)), None)
            break
        if not matches[id(t)]:
            env = env_of(t.values, "t")
            action = next((c for c in clauses if c[0] == "not_matched_by_source" and holds(c[2], env)), None)
        if action is None:
            out.rows.append(t)
        elif action[1] == "delete":
            out.deleted.append(t)
            out.num_deleted += 1
        else:
            new = dict(s) if action[1] == "updateAll" else assign(t.values, action[3], env)
            out.deleted.append(t)
            out.updated += 1
            out.inserted.append(new)
            out.rows.append(MRow(new))
    matched_sources = {id(s) for m in matches.values() for s in m}
    for s in source:
        if id(s) in matched_sources:
            continue
        env = env_of(s, "s")
        action = next((c for c in clauses if c[0] == "not_matched" and holds(c[2], env)), None)
        if action is None:
            continue
        new = dict(s) if action[1] == "insertAll" else {c: ev(action[3][c], env) if c in action[3] else None
                                                         for c in COLUMNS}
        out.inserted.append(new)
        out.num_inserted += 1
        out.rows.append(MRow(new))
    return out


# --- reading the table back --------------------------------------------------------------------
def key(values: dict) -> tuple:
    return tuple((v is not None, v) for v in (values[c] for c in COLUMNS))


def multiset(rows) -> Counter:
    return Counter(key(r) for r in rows)


def read_with_row_ids(path: str, kind: str) -> list[tuple[tuple, dict]]:
    """((partition dir, *ROW__ID), row) of every visible row (a ROW__ID is unique within its
    partition); scan internals, for the ROW__ID checks only (the content itself is compared
    through the public AcidTable.toArrow())."""
    found = []
    for r in rows_with_row_ids(path):
        rid = r.pop("ROW__ID")
        found.append(((partition_dir(kind, r["p"]), rid["writeId"], rid["bucketId"], rid["rowId"]), r))
    return found


_DIR = re.compile(r"^(delete_delta|delta)_(\d+)_(\d+)(?:_(\d+))?$")


def files_of(path: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs}


def new_bucket_files(before: set[str], after: set[str], write_id: int) -> set[tuple[str, str, int]]:
    """(partition dir, delta | delete_delta, bucket) of the files a step added."""
    assert before <= after, f"files disappeared: {sorted(before - after)}"
    found = set()
    for rel in after - before:
        parts = rel.split(os.sep)
        part, dirname, name = os.sep.join(parts[:-2]), parts[-2], parts[-1]
        m = _DIR.match(dirname)
        assert m, f"unexpected new file {rel}"
        assert int(m.group(2)) == int(m.group(3)) == write_id, f"{rel}: not of write id {write_id}"
        if name.startswith("bucket_"):
            found.add((part, m.group(1), int(name[len("bucket_"):])))
        else:
            assert name == "_orc_acid_version", f"unexpected new file {rel}"
    return found


# --- running a program -------------------------------------------------------------------------
class Run:
    def __init__(self, kind: str, spark=None):
        self.kind = kind
        self.spark = spark
        self.path = create(kind)
        self.rows: list[MRow] = []
        self.history_len = 0

    def table(self) -> AcidTable:
        return AcidTable.forPath(self.spark, self.path) if self.spark is not None else AcidTable.load(self.path)

    def step(self, step) -> None:
        note(describe(step))
        before = files_of(self.path)
        op = step[0]
        if op == "append":
            data = pa.Table.from_pylist(step[1], schema=SCHEMA)
            metrics = AcidTable.load(self.path).append(data)
            outcome = Outcome(self.rows + [MRow(dict(r)) for r in step[1]], inserted=[dict(r) for r in step[1]])
        elif op == "delete":
            outcome = model_delete(self.rows, step[1])
            metrics = self.table().delete(None if step[1] is None else sql(step[1]))
        elif op == "update":
            outcome = model_update(self.rows, step[1], step[2])
            metrics = self.table().update(None if step[1] is None else sql(step[1]),
                                          {k: sql(v) for k, v in step[2].items()})
        else:
            outcome = model_merge(self.rows, step[1], step[2], step[3])
            metrics = self.merge(step, outcome)
        event(f"{self.kind} {op}: " + ("cardinality error" if metrics is None else
                                      "no change" if metrics["writeId"] is None else "changed rows"))
        if metrics is None:  # the MERGE failed, as the model said: nothing changed
            assert files_of(self.path) == before
            self.check_rows(self.rows, None)
            return
        self.check_metrics(op, metrics, outcome)
        write_id = metrics["writeId"]
        if write_id is None:
            assert files_of(self.path) == before, "a DML that changed nothing wrote files"
        else:
            self.history_len += 1
            self.check_files(before, write_id, outcome)
        self.check_rows(outcome.rows, write_id)
        self.rows = outcome.rows

    def merge(self, step, outcome: Outcome):
        _, source, extra, clauses = step
        frame = self.spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in source], SPARK_DDL)
        on = "t.id = s.id" + ("" if extra is None else f" AND {sql(extra)}")
        builder = self.table().alias("t").merge(frame.alias("s"), on)
        for when, action, cond, values in clauses:
            c = None if cond is None else sql(cond)
            v = None if values is None else {k: sql(x) for k, x in values.items()}
            if (when, action) == ("matched", "update"):
                builder = builder.whenMatchedUpdate(condition=c, set=v)
            elif (when, action) == ("matched", "updateAll"):
                builder = builder.whenMatchedUpdateAll(condition=c)
            elif (when, action) == ("matched", "delete"):
                builder = builder.whenMatchedDelete(condition=c)
            elif (when, action) == ("not_matched", "insert"):
                builder = builder.whenNotMatchedInsert(condition=c, values=v)
            elif (when, action) == ("not_matched", "insertAll"):
                builder = builder.whenNotMatchedInsertAll(condition=c)
            elif (when, action) == ("not_matched_by_source", "update"):
                builder = builder.whenNotMatchedBySourceUpdate(condition=c, set=v)
            else:
                builder = builder.whenNotMatchedBySourceDelete(condition=c)
        if outcome.cardinality_error:
            with pytest.raises(MergeCardinalityError) as info:
                builder.execute()
            assert on in str(info.value)
            return None
        return builder.execute()

    def check_metrics(self, op: str, metrics: dict, outcome: Outcome) -> None:
        parts = sorted({partition_dir(self.kind, r.values["p"]) for r in outcome.deleted}
                       | {partition_dir(self.kind, v["p"]) for v in outcome.inserted})
        if op == "append":
            assert metrics["numOutputRows"] == len(outcome.inserted)
            assert metrics["partitions"] == parts
            assert isinstance(metrics["writeId"], int)
            return
        changed = outcome.num_deleted + outcome.updated + outcome.num_inserted
        expected = {"operation": op, "numDeletedRows": outcome.num_deleted, "numUpdatedRows": outcome.updated,
                    "numInsertedRows": outcome.num_inserted, "numAffectedRows": changed,
                    "partitions": parts if changed else []}
        assert {k: metrics[k] for k in expected} == expected
        assert (metrics["writeId"] is None) == (changed == 0)
        assert (metrics["numFilesAdded"] == 0) == (changed == 0)

    def check_files(self, before: set[str], write_id: int, outcome: Outcome) -> None:
        """New files only where the model put changes: delete files per (old partition, writer id
        of the old row), insert files per new partition (and, bucketed, per Hive bucket)."""
        found = new_bucket_files(before, files_of(self.path), write_id)
        expected = {(partition_dir(self.kind, r.values["p"]), "delete_delta", writer_of(r.row_id))
                    for r in outcome.deleted}
        if bucketed(self.kind):
            expected |= {(partition_dir(self.kind, v["p"]), "delta", hive_bucket(v["b"])) for v in outcome.inserted}
            assert found == expected
        else:
            assert {f for f in found if f[1] == "delete_delta"} == expected
            assert {f[:2] for f in found if f[1] == "delta"} == {(partition_dir(self.kind, v["p"]), "delta")
                                                                 for v in outcome.inserted}

    def check_rows(self, rows: list[MRow], write_id: int | None) -> None:
        actual = AcidTable.load(self.path).toArrow()
        assert actual.schema.names == list(COLUMNS)
        assert multiset(actual.to_pylist()) == multiset(r.values for r in rows)
        # ROW__IDs: untouched rows keep theirs; new row versions carry the step's write id
        with_ids = read_with_row_ids(self.path, self.kind)
        by_id = dict(with_ids)
        assert len(by_id) == len(with_ids), "two visible rows share a ROW__ID"
        fresh = []
        for r in rows:
            if r.row_id is None:
                fresh.append(r)
            else:
                assert by_id.pop(r.row_id, None) == r.values, f"row {r.values} lost its ROW__ID {r.row_id}"
        assert multiset(by_id.values()) == multiset(r.values for r in fresh)
        pool: dict[tuple, list] = {}
        for rid, values in by_id.items():
            assert rid[1] == write_id, f"new row {values} has ROW__ID {rid}, not of write id {write_id}"
            pool.setdefault(key(values), []).append(rid)
        for r in fresh:
            r.row_id = pool[key(r.values)].pop()
        if bucketed(self.kind):
            for rid, values in with_ids:
                assert writer_of(rid) == hive_bucket(values["b"]), f"row {values} is in bucket {writer_of(rid)}"

    def check_spark(self, spark) -> None:
        got = [r.asDict() for r in spark.read.format("acidorc").load(self.path).collect()]
        assert multiset(got) == multiset(r.values for r in self.rows)
        assert len(AcidTable.load(self.path).history()) == self.history_len

    def close(self) -> None:
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)


def run_program(kind: str, steps, spark_for_dml, spark_for_read) -> None:
    run = Run(kind, spark_for_dml)
    note(f"table: {kind} at {run.path}")
    try:
        for step in steps:
            run.step(step)
        if spark_for_read is not None:
            run.check_spark(spark_for_read)
    finally:
        run.close()


# --- the properties ----------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.parametrize("kind", KINDS)
@examples(4)
@given(steps=programs(with_spark=False, min_steps=3, max_steps=6))
def test_engine_free_dml_matches_model(spark, kind, steps):
    run_program(kind, steps, None, spark)


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["plain", "bucketed_partitioned"])
@examples(3)
@given(steps=programs(with_spark=True, min_steps=2, max_steps=3))
def test_spark_dml_and_merge_match_model(spark, kind, steps):
    run_program(kind, steps, spark, spark)


# --- the model checks itself on hand-worked cases ---------------------------------------------
def test_model_three_valued_logic():
    env = {(None, "a"): None, (None, "b"): 2, (None, "s"): "x"}
    a, b, s = ("col", None, "a", False), ("col", None, "b", False), ("col", None, "s", False)
    assert ev(("cmp", "=", a, ("lit", 1)), env) is None
    assert ev(("not", ("cmp", "=", a, ("lit", 1))), env) is None
    assert ev(("or", ("cmp", "=", a, ("lit", 1)), ("cmp", "=", b, ("lit", 2))), env) is True
    assert ev(("and", ("cmp", "=", a, ("lit", 1)), ("cmp", "=", b, ("lit", 3))), env) is False
    assert ev(("in", b, [("lit", 1), ("lit", None)], False), env) is None
    assert ev(("in", b, [("lit", 1), ("lit", None)], True), env) is None
    assert ev(("in", b, [("lit", 2), ("lit", None)], True), env) is False
    assert ev(("nse", a, ("lit", None)), env) is True
    assert ev(("concat", s, ("lit", "_")), env) == "x_"
    assert ev(("case", ("cmp", ">", a, ("lit", 0)), ("lit", 1), b), env) == 2
    assert sql(("in", ("col", "t", "s", True), [("lit", "q=1"), ("lit", None)], True)) == "(t.S NOT IN ('q=1', NULL))"
    assert partition_dir("partitioned", "q=1") == "p=q%3D1"
    assert [hive_bucket(v) for v in (1, 2, None, 3, 5, -7, 7)] == [1, 2, 0, 2, 1, 1, 0]


def test_model_merge_rules():
    t = [MRow({"id": 1, "a": 1, "s": None, "b": None, "p": None}),
         MRow({"id": None, "a": 2, "s": None, "b": None, "p": None})]
    src = [{"id": 1, "a": 5, "s": "x", "b": 1, "p": "x"}, {"id": 1, "a": 6, "s": "y", "b": 1, "p": "y"},
           {"id": None, "a": 7, "s": None, "b": None, "p": None}]
    assert model_merge(t, src, None, [("matched", "update", None, {"a": ("lit", 0)})]).cardinality_error
    lone_delete = model_merge(t, src, None, [("matched", "delete", None, None),
                                             ("not_matched", "insertAll", None, None)])
    assert not lone_delete.cardinality_error and lone_delete.num_deleted == 1
    assert [r.values["a"] for r in lone_delete.rows] == [2, 7]  # the NULL keys never match
