"""Read Hive ACID tables with Hive 2.3's own reader, driven through py4j.

Test support only: interop tests write a table with our code, read it back with
this module and with ``acid_source``, and compare.  Hive does the whole ACID read
here -- ``OrcInputFormat.getSplits`` (``AcidUtils.getAcidState`` picks the base
and deltas from the valid transaction list) and ``getRecordReader``
(``OrcRawRecordMerger`` applies delete deltas) -- we only build the JobConf and
convert the rows to Python.

Usage::

    with HiveAcidReader() as hive:           # one JVM, reusable
        rows = hive.read("/tmp/t", [("id", "int"), ("name", "string")],
                         valid_txns=make_valid_txns(4, aborted=[2]))

Conventions and limits
----------------------
* Hive 2.3 speaks *transaction* ids; we treat write id == txn id.
  ``valid_txns`` is Hive 2.3's ``ValidReadTxnList`` string
  ``"HWM:MINOPEN[:EXC...]"`` (exceptions = open or aborted ids); see
  :func:`make_valid_txns`.  ``None`` means "everything on disk is committed".
* Column names must match the field names of the ``row`` struct in the ORC
  files (Hive/ORC map file columns to the requested schema by name).
* Tables are read with split-update semantics (``transactional_properties=
  default``: insert-only ``delta_*`` dirs plus ``delete_delta_*`` dirs), i.e.
  Hive 3 style layouts.  Hive 2.3 does not understand ``_vN`` dir suffixes.
* Every ACID ORC file must carry the ``hive.acid.key.index`` user metadata,
  otherwise Hive 2.3 fails with "Can't find user metadata hive.acid.key.index".
* The JVM runs with ``user.timezone=UTC``.  Values are converted from their raw
  epoch-based form, so dates/timestamps before 1582 come back in the proleptic
  Gregorian calendar (what ORC stores), not the hybrid Julian calendar that
  Hive 2.3 would *print*.  Timestamps are naive ``datetime`` (UTC wall clock),
  truncated (floored) to microseconds.  ``char(n)`` values come back padded to
  ``n``.  Decimals are quantized to the declared scale.  ``uniontype`` is not
  supported.
* Rows come back in Hive's order (per split, key order), which callers should
  not rely on.
"""

from __future__ import annotations

import base64
import collections
import datetime as _dt
import decimal
import glob
import json
import os
import re
import struct
import subprocess
import time
from typing import Any, Iterable, Sequence

from acid_source.layout.bucketing import parse_hive_type as _parse_hive_type

__all__ = [
    "HiveAcidReader",
    "HiveReadError",
    "make_valid_txns",
    "hive_job_conf",
    "parse_hive_type",
]

LONG_MAX = (1 << 63) - 1

# Classes that must win over copies in other jars: hive-storage-api-2.8.1 also
# ships Hive 3's ValidReadTxnList, which lacks Hive 2.3's isValidBase().
_FIRST_JARS = ("hive-exec-2.3.*-core.jar", "hive-common-2.3.*.jar")

_JAVA_OPTS = [
    "-Duser.timezone=UTC",
    "-Dfile.encoding=UTF-8",
    "-XX:+IgnoreUnrecognizedVMOptions",
    "-XX:TieredStopAtLevel=1",  # faster start-up; our reads are small
    "-XX:+UseSerialGC",
    "-Xss4m",
    "-Dlog4j2.level=ERROR",
] + [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
    for pkg in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net",
        "java.nio", "java.util", "java.util.concurrent", "java.util.concurrent.atomic",
        "sun.nio.ch", "sun.nio.cs", "sun.security.action", "sun.util.calendar",
    )
]


class HiveReadError(RuntimeError):
    """A failure on the Java side, with the Java exception chain in the message.

    Attributes: ``java_class`` (class of the outermost Java exception),
    ``java_message``, ``java_stacktrace`` (full text) and ``jvm_output`` (tail
    of the JVM's stdout/stderr, mostly log4j ERROR lines).
    """

    def __init__(self, message: str, *, java_class: str = "", java_message: str = "",
                 java_stacktrace: str = "", jvm_output: str = ""):
        super().__init__(message)
        self.java_class = java_class
        self.java_message = java_message
        self.java_stacktrace = java_stacktrace
        self.jvm_output = jvm_output


# --------------------------------------------------------------------------
# Hive type strings
# --------------------------------------------------------------------------

def parse_hive_type(text: str) -> tuple:
    """A Hive type string as a tuple tree, e.g. ``("decimal", 12, 3)`` (acidorc's parser);
    ValueError for types Hive's reader here cannot hand back (``uniontype``)."""
    try:
        return _parse_hive_type(text)
    except NotImplementedError as exc:
        raise ValueError(f"unsupported Hive type in {text!r}: {exc}") from None



def _type_str(t: tuple, *, for_transfer: bool = False) -> str:
    """Render a parsed type; ``for_transfer`` swaps timestamp for string, which
    Hive fills with ``TimestampWritable.toString()`` (exact to the nanosecond;
    Hive's own timestamp->decimal cast goes through a double and loses digits)."""
    k = t[0]
    if k == "timestamp" and for_transfer:
        return "string"
    if k == "decimal":
        return f"decimal({t[1]},{t[2]})"
    if k in ("char", "varchar"):
        return f"{k}({t[1]})"
    if k == "array":
        return f"array<{_type_str(t[1], for_transfer=for_transfer)}>"
    if k == "map":
        return (f"map<{_type_str(t[1], for_transfer=for_transfer)},"
                f"{_type_str(t[2], for_transfer=for_transfer)}>")
    if k == "struct":
        inner = ",".join(f"{n}:{_type_str(ft, for_transfer=for_transfer)}" for n, ft in t[1])
        return f"struct<{inner}>"
    return k


# --------------------------------------------------------------------------
# JobConf
# --------------------------------------------------------------------------

_VALID_TXNS = re.compile(r"^-?\d+:-?\d+(:\d+)*$")


def make_valid_txns(high_watermark: int, *, open: Iterable[int] = (),
                    aborted: Iterable[int] = ()) -> str:
    """Build Hive 2.3's ValidReadTxnList string ``"HWM:MINOPEN[:EXC...]"``.

    Ids above ``high_watermark`` and ids in ``open``/``aborted`` are invisible.
    """
    open_ = sorted(set(open))
    exc = sorted(set(open_) | set(aborted))
    min_open = open_[0] if open_ else LONG_MAX
    return ":".join(str(x) for x in [high_watermark, min_open, *exc])


def _normalize_valid_txns(valid_txns: str | None) -> str:
    if valid_txns is None:
        return f"{LONG_MAX}:{LONG_MAX}"
    s = valid_txns.strip()
    if not _VALID_TXNS.match(s):
        raise ValueError(
            f"valid_txns must be Hive 2.3's ValidReadTxnList string 'HWM:MINOPEN[:EXC...]' "
            f"(':'-separated integers, no table name, no aborted-bits field), got {valid_txns!r}")
    hwm, min_open, *exc = s.split(":")
    # Hive binary-searches the exceptions, so they must be sorted.
    exc_sorted = sorted(set(int(x) for x in exc))
    return ":".join([hwm, min_open, *map(str, exc_sorted)])


def hive_job_conf(table_uri: str, columns: Sequence[tuple[str, str]], valid_txns: str | None = None,
                  bucket_count: int = 1) -> dict[str, str]:
    """The JobConf entries that make Hive 2.3's OrcInputFormat do an ACID read.

    Checked one by one (dropping each, on a base + delete_delta + delta table):
    without ``transactional`` / ``transactional_properties`` insert-only deltas
    are silently skipped; without ``hive.txn.operational.properties=1`` Hive
    looks for delete events under ``delta_*`` names and silently applies no
    deletes; without ``hive.txn.valid.txns`` everything is visible; without
    ``hive.transactional.table.scan`` the read fails (ClassCastException);
    without ``schema.evolution.columns[.types]`` or ``mapred.input.dir`` it
    fails with a clear message.  The rest (``bucket_count``, ``columns*``,
    ``hive.io.file.read*``) made no difference there but are what Hive's planner
    sets, so they are kept.
    """
    names = ",".join(n for n, _ in columns)
    types = ",".join(_type_str(parse_hive_type(t)) for _, t in columns)
    return {
        # table properties, normally copied in by HiveInputFormat
        "transactional": "true",
        "transactional_properties": "default",
        "hive.txn.operational.properties": "1",  # split-update (delete_delta dirs)
        "bucket_count": str(bucket_count),
        "columns": names,
        "columns.types": types,
        "schema.evolution.columns": names,
        "schema.evolution.columns.types": types,
        # scan properties, normally set by the planner
        "hive.transactional.table.scan": "true",
        "hive.txn.valid.txns": _normalize_valid_txns(valid_txns),
        "hive.io.file.readcolumn.ids": ",".join(str(i) for i in range(len(columns))),
        "hive.io.file.readcolumn.names": names,
        "hive.io.file.read.all.columns": "true",
        "hive.vectorized.execution.enabled": "false",  # row mode: no MapWork needed
        "mapred.input.dir": table_uri.replace(",", "\\,"),  # the value is a comma list
        # no cross-read footer caching inside the long-lived JVM
        "hive.orc.cache.stripe.details.mem.size": "0",
        # file ids only exist on HDFS; avoids an ERROR log line per directory
        "hive.orc.splits.include.fileid": "false",
    }


def _table_uri(table_dir: str) -> str:
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", table_dir):
        return table_dir  # already a URI (file:/..., hdfs://...)
    path = os.path.abspath(table_dir)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"table directory {path} does not exist")
    return "file://" + path


# --------------------------------------------------------------------------
# JSON -> Python conversion (by declared type)
# --------------------------------------------------------------------------

_EPOCH_DATE = _dt.date(1970, 1, 1)
_MS_PER_DAY = 86_400_000
_DEC_CTX = decimal.Context(prec=100)
_F32 = struct.Struct("<f")


def _convert(t: tuple, v: Any) -> Any:
    if v is None:
        return None
    k = t[0]
    if k in ("int", "bigint", "smallint", "tinyint"):
        return int(v)
    if k == "boolean":
        return bool(v)
    if k == "double":
        return float(v)  # also "NaN" / "Infinity" / "-Infinity"
    if k == "float":
        return _F32.unpack(_F32.pack(float(v)))[0]
    if k in ("string", "varchar", "char"):
        return v
    if k == "decimal":
        return decimal.Decimal(v).quantize(decimal.Decimal(1).scaleb(-t[2]), context=_DEC_CTX)
    if k == "date":
        return _EPOCH_DATE + _dt.timedelta(days=int(v) // _MS_PER_DAY)
    if k == "timestamp":  # transferred as Hive's text form, UTC wall clock
        return _parse_hive_timestamp(v)
    if k == "binary":
        return base64.b64decode(v)
    if k == "array":
        return [_convert(t[1], x) for x in v]
    if k == "map":
        return {_convert_key(t[1], key): _convert(t[2], val) for key, val in v.items()}
    if k == "struct":
        return tuple(_convert(ft, x) for (_, ft), x in zip(t[1], v))
    raise ValueError(f"unsupported type {t}")


_TS_TEXT = re.compile(r"^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?$")
_GREGORIAN_START = (1582, 10, 15)


def _parse_hive_timestamp(text: str) -> _dt.datetime:
    """Parse ``TimestampWritable.toString()``.

    Java formats instants before 1582-10-15 in the Julian calendar; convert
    those back to the proleptic Gregorian calendar that ORC's epoch-based
    values (and Python) use.  Nanoseconds are floored to microseconds.
    """
    m = _TS_TEXT.match(text)
    if not m:
        raise ValueError(f"unexpected timestamp text from Hive: {text!r}")
    y, mo, d, hh, mi, ss = (int(g) for g in m.groups()[:6])
    micros = int((m.group(7) or "0").ljust(9, "0")[:6])
    if (y, mo, d) < _GREGORIAN_START:
        a = (14 - mo) // 12
        yy, mm = y + 4800 - a, mo + 12 * a - 3
        jdn = d + (153 * mm + 2) // 5 + 365 * yy + yy // 4 - 32083  # Julian calendar
        day = _dt.date.fromordinal(jdn - 1721425)
    else:
        day = _dt.date(y, mo, d)
    return _dt.datetime(day.year, day.month, day.day, hh, mi, ss, micros)


def _convert_key(t: tuple, s: str) -> Any:
    """Map keys arrive as JSON object keys, i.e. strings."""
    k = t[0]
    if k == "boolean":
        return s == "true"
    if k in ("int", "bigint", "smallint", "tinyint", "date"):
        return _convert(t, int(s))
    if k in ("array", "map", "struct"):
        raise ValueError(f"map keys of type {k} are not supported")
    return _convert(t, s)


# --------------------------------------------------------------------------
# The reader
# --------------------------------------------------------------------------

def _default_jars_dir() -> str:
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "jars")


def _classpath(jars_dir: str) -> list[str]:
    jars = sorted(glob.glob(os.path.join(jars_dir, "*.jar")))
    first = []
    for pattern in _FIRST_JARS:
        hits = sorted(glob.glob(os.path.join(jars_dir, pattern)))
        if not hits:
            raise FileNotFoundError(f"no {pattern} in {jars_dir}")
        first.append(hits[0])
    return first + [j for j in jars if j not in first]


class HiveAcidReader:
    """Reads Hive ACID table directories with Hive 2.3's OrcInputFormat.

    Launches one JVM (a bare py4j gateway, no Spark) on construction; reuse the
    instance for many reads and ``close()`` it (or use it as a context manager).

    :param jars_dir: directory with Hive 2.3 / Hadoop / ORC jars; defaults to
        pyspark's bundled ``jars`` directory.
    :param java: java executable; defaults to ``$JAVA_HOME/bin/java`` or ``java``.
    """

    def __init__(self, jars_dir: str | None = None, java: str | None = None):
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

        jars_dir = jars_dir or _default_jars_dir()
        classpath = _classpath(jars_dir)
        py4j_jars = [j for j in classpath if os.path.basename(j).startswith("py4j-")]
        if java is None:
            home = os.environ.get("JAVA_HOME")
            java = os.path.join(home, "bin", "java") if home else "java"
        # JVM stdout/stderr (log4j ERROR lines, etc.) are kept for error messages.
        self._jvm_output: collections.deque[str] = collections.deque(maxlen=200)
        self._gateway = None
        self._proc = None
        t0 = time.monotonic()
        port, self._proc = launch_gateway(
            classpath=os.pathsep.join(classpath),
            jarpath=py4j_jars[0] if py4j_jars else "",
            java_path=java,
            javaopts=list(_JAVA_OPTS),
            die_on_exit=True,
            redirect_stdout=self._jvm_output,
            redirect_stderr=self._jvm_output,
            return_proc=True,
        )
        self._gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=False))
        self.startup_seconds = time.monotonic() - t0
        try:
            self._jvm = self._gateway.jvm
            self._input_format = self._jvm.org.apache.hadoop.hive.ql.io.orc.OrcInputFormat()
            self._mapper = self._make_mapper()
        except Exception as e:
            wrapped = self._wrap(e, "<start-up>")
            self.close()
            if wrapped is e:
                raise
            raise wrapped from e

    # -- lifecycle ---------------------------------------------------------

    def __enter__(self) -> "HiveAcidReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Shut the JVM down (idempotent)."""
        gateway, proc = self._gateway, self._proc
        self._gateway = self._proc = None
        stop_gateway(gateway, proc)

    def __del__(self):  # best effort; prefer close()/with
        try:
            self.close()
        except Exception:
            pass

    # -- reading -----------------------------------------------------------

    def read(self, table_dir: str, columns: list[tuple[str, str]],
             valid_txns: str | None = None, bucket_count: int = 1,
             with_row_id: bool = False, conf: dict[str, str] | None = None) -> list[tuple]:
        """Read one table (or partition) directory the way Hive 2.3 would.

        :param table_dir: local path or URI of the table or partition directory
            (the one holding ``base_*`` / ``delta_*`` / ``delete_delta_*``).
        :param columns: ``(name, hive_type)`` for each table column, in order,
            e.g. ``[("id", "int"), ("d", "decimal(10,2)"), ("s", "struct<a:int>")]``.
        :param valid_txns: Hive 2.3 ``ValidReadTxnList`` string
            ``"HWM:MINOPEN[:EXC...]"`` (see :func:`make_valid_txns`); ``None``
            treats everything on disk as committed.
        :param bucket_count: the table's ``bucket_count`` property.
        :param with_row_id: prepend Hive's ``RecordIdentifier`` of each row as a
            tuple ``(originalWriteId, bucketProperty, rowId)``, i.e. each row is
            ``((wid, bucket, row_id), col1, col2, ...)``.
        :param conf: extra JobConf entries, applied last (e.g.
            ``{"hive.exec.orc.split.strategy": "ETL"}``).
        :returns: list of row tuples of plain Python values, in Hive's order.
        :raises HiveReadError: on any Java-side failure.
        """
        if self._gateway is None:
            raise RuntimeError("HiveAcidReader is closed")
        types = [parse_hive_type(t) for _, t in columns]  # ValueError on bad/union types
        entries = hive_job_conf(_table_uri(table_dir), columns, valid_txns, bucket_count)
        entries.update(conf or {})
        row_type = ("struct", tuple((n, t) for (n, _), t in zip(columns, types)))
        self._jvm_output.clear()  # so an error shows only this read's output
        try:
            return self._read(entries, row_type, with_row_id)
        except Exception as e:
            wrapped = self._wrap(e, table_dir)
            if wrapped is e:
                raise
            raise wrapped from e

    def _read(self, entries: dict[str, str], row_type: tuple, with_row_id: bool) -> list[tuple]:
        jvm = self._jvm
        job = jvm.org.apache.hadoop.mapred.JobConf()
        for k, v in entries.items():
            job.set(k, v)

        # OrcStruct (writables) --ObjectInspectorConverters--> standard Java
        # objects (timestamps as Hive's exact text form) --Jackson--> one JSON
        # string per row: 3 py4j calls per row (5 with row ids), not per cell.
        type_utils = jvm.org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils
        orc_oi = jvm.org.apache.hadoop.hive.ql.io.orc.OrcStruct.createObjectInspector(
            type_utils.getTypeInfoFromTypeString(_type_str(row_type)))
        java_oi = type_utils.getStandardJavaObjectInspectorFromTypeInfo(
            type_utils.getTypeInfoFromTypeString(_type_str(row_type, for_transfer=True)))
        converter = jvm.org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorConverters \
            .getConverter(orc_oi, java_oi)
        to_json = self._mapper.writeValueAsString
        field_types = [ft for _, ft in row_type[1]]

        rows: list[tuple] = []
        reporter = jvm.org.apache.hadoop.mapred.Reporter.NULL
        for split in self._input_format.getSplits(job, 1):
            reader = self._input_format.getRecordReader(split, job, reporter)
            try:
                key, value = reader.createKey(), reader.createValue()
                while reader.next(key, value):
                    data = json.loads(to_json(converter.convert(value)))
                    row = tuple(_convert(t, x) for t, x in zip(field_types, data))
                    if with_row_id:
                        rid = json.loads(to_json(reader.getRecordIdentifier()))
                        row = ((rid["transactionId"], rid["bucketId"], rid["rowId"]),) + row
                    rows.append(row)
            finally:
                reader.close()
        return rows

    # -- helpers -----------------------------------------------------------

    def _make_mapper(self):
        jvm = self._jvm
        jackson = jvm.com.fasterxml.jackson.databind
        module = jackson.module.SimpleModule("hive-reader")
        to_string = jackson.ser.std.ToStringSerializer.instance
        for cls in ("org.apache.hadoop.hive.common.type.HiveDecimal",
                    "org.apache.hadoop.hive.common.type.HiveChar",      # padded value
                    "org.apache.hadoop.hive.common.type.HiveVarchar"):
            module.addSerializer(jvm.java.lang.Class.forName(cls), to_string)
        mapper = jackson.ObjectMapper()
        mapper.registerModule(module)
        # java.sql.Date values and keys as epoch millis (calendar-independent)
        mapper.configure(jackson.SerializationFeature.WRITE_DATES_AS_TIMESTAMPS, True)
        mapper.configure(jackson.SerializationFeature.WRITE_DATE_KEYS_AS_TIMESTAMPS, True)
        return mapper

    def _wrap(self, e: Exception, table_dir: str) -> Exception:
        from py4j.protocol import Py4JError, Py4JJavaError

        output = "\n".join(line.rstrip() for line in list(self._jvm_output)[-30:] if line.strip())
        if isinstance(e, Py4JJavaError):
            jexc = e.java_exception
            try:
                chain, cur, seen = [], jexc, 0
                while cur is not None and seen < 10:
                    chain.append(cur.toString())
                    nxt = cur.getCause()
                    cur = None if nxt is None or nxt.equals(cur) else nxt
                    seen += 1
                trace = self._jvm.org.apache.commons.lang3.exception.ExceptionUtils.getStackTrace(jexc)
                java_class = jexc.getClass().getName()
                java_message = jexc.getMessage() or ""
            except Exception:  # the JVM may be gone
                chain, trace, java_class, java_message = [str(e)], str(e), "", ""
            msg = f"Hive 2.3 failed on {table_dir}: " + "\n  caused by: ".join(chain)
            if output:
                msg += f"\n--- JVM output (tail) ---\n{output}"
            return HiveReadError(msg, java_class=java_class, java_message=java_message,
                                 java_stacktrace=trace, jvm_output=output)
        if isinstance(e, Py4JError):
            msg = f"py4j failure while reading {table_dir}: {e}"
            if output:
                msg += f"\n--- JVM output (tail) ---\n{output}"
            return HiveReadError(msg, jvm_output=output)
        return e


def stop_gateway(gateway, proc) -> None:
    """Shut a py4j gateway and its JVM down (either may be None): the JVM exits when its stdin
    closes (``die_on_exit``), else it is killed."""
    if gateway is not None:
        try:
            gateway.shutdown()
        except Exception:
            pass
    if proc is not None:
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            proc.kill()
            proc.wait(timeout=10)
