"""Spark's options: the tables of what ``spark.read`` / ``readStream`` / ``df.write`` take with
``format("acidorc")``, their parsing into the core's typed specs (:mod:`acid_source.specs`),
in one place, and the edge where the core's errors become option errors.

Spark hands options over as a case-insensitive dict of strings; anything not known is an error
that names the option, so a typo never silently changes what a query returns. The core names
the values it checks as arguments (:mod:`acid_source.values`); :func:`option_errors` reports an
argument error of an option's name as that option's error, for everything Spark drives.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Callable, TypeVar

from ..errors import InvalidArgumentError, InvalidOptionError
from ..layout.writeids import ValidTxnList, ValidWriteIdList
from ..orc.codecs import DEFAULT_CODEC, canonical_codec
from ..settings import parse_bool, parse_seconds
from ..specs import ReadSpec, StreamReadSpec, WriteSpec
from ..values import (
    DEFAULT_MAX_SPLIT_BYTES,
    TABLE_TYPES,
    check_change_range,
    default_read_lease_seconds,
    parse_partition_spec,
    parse_size,
    parse_timestamp,
    parse_version,
)

F = TypeVar("F", bound=Callable)

STORAGE_OPTION_PREFIX = "fs."
#: The option holding fsspec storage options as one JSON object (typed and nested values).
STORAGE_OPTIONS_JSON = "storageOptions"
#: Names of storage options that hold credentials (matched on every key of a nested option).
#: They are refused inside the JSON option: Spark redacts an option in plans and logs by its
#: name (``spark.redaction.regex``), so a secret must be an option of its own whose name says
#: so, never part of a JSON value under an innocent name.
SECRET_OPTION_NAMES = re.compile(
    r"secret|password|passwd|token|credential|private|signature|sas|(^|[._-])key($|[._-])|access[._-]?key",
    re.IGNORECASE)
_STORAGE_JSON_HELP = ("a JSON object of fsspec storage options for typed or nested values, e.g. "
                      '{"client_kwargs": {"endpoint_url": "http://..."}, "anon": false}; credentials go in '
                      "fs.<name> options (fs.key, fs.secret), never in here")

READ_OPTIONS = {
    "path": "table location (URL or local path)",
    "validWriteIds": "Hive ValidWriteIdList snapshot, e.g. 'db.t:5:9223372036854775807::'",
    "validTxns": "Hive ValidReadTxnList deciding which _vN (compacted) directories are visible",
    "versionAsOf": "time travel: the table right after this write id committed",
    "timestampAsOf": "time travel: the table as of this time (ISO-8601, UTC unless a zone is given, or epoch seconds)",
    "includeRowId": "true to add Hive's ROW__ID struct column (writeId, bucketId, rowId)",
    "tableType": "auto | full | insert_only",
    "maxSplitBytes": "a bucket larger than this is read by several tasks (e.g. 256m)",
    "partitionFilter": "SQL condition on partition columns; only matching partition directories are read",
    "rowFilter": "SQL condition the reader applies to every row (Spark SQL syntax and NULL rules, "
                 "as AcidTable.scan's rowFilter): rows where it is not true are not returned",
    "filterPushdown": "auto | true | false: use filters Spark pushes down (auto: where Spark does it safely)",
    "metastoreUrl": "the transaction store (SQLAlchemy URL); default: $ACIDORC_METASTORE_URL or ~/.acidorc",
    "nativeRead": "true | false: acid_source.read and AcidTable.toDF let Spark's own ORC reader read the files "
                  "that need no merge (default true; spark.read.format('acidorc') always reads through acidorc)",
    "readLeaseSeconds": "how long the cleaner keeps the files a read's snapshot needs, counted from when Spark "
                        "plans the read (default: $ACIDORC_READ_LEASE_SECONDS or 3600; 0 takes no lease)",
    "readChangeFeed": "true to read the change feed: the rows write ids inserted and deleted, with _change_type, "
                      "_commit_version and _commit_timestamp (Delta Lake's change data feed)",
    "startingVersion": "change feed: the first write id (inclusive)",
    "endingVersion": "change feed: the last write id (inclusive; default the latest)",
    "startingTimestamp": "change feed: write ids committed at or after this time (ISO-8601, UTC unless a zone is "
                         "given, or epoch seconds)",
    "endingTimestamp": "change feed: write ids committed at or before this time",
    STORAGE_OPTIONS_JSON: _STORAGE_JSON_HELP,
}
#: the options that choose a change feed's range
CHANGE_RANGE_OPTIONS = ("startingVersion", "endingVersion", "startingTimestamp", "endingTimestamp")
#: read options a change feed does not take
NOT_WITH_CHANGE_FEED = ("versionAsOf", "timestampAsOf", "validWriteIds", "validTxns", "includeRowId",
                        "partitionFilter", "rowFilter", "tableType")

WRITE_OPTIONS = {
    "path": "table location (URL or local path)",
    "metastoreUrl": READ_OPTIONS["metastoreUrl"],
    "partition": "static partition to write, e.g. 'ds=2026-11-21/region=eu' (the data then lacks those columns)",
    "partitionOverwriteMode": "static (overwrite replaces the whole table) | dynamic (only partitions in the data)",
    "partitionColumns": "new table: comma-separated partition columns (taken from the data's columns)",
    "bucketColumns": "new table: comma-separated bucketing columns",
    "numBuckets": "new table: number of buckets (with bucketColumns)",
    "tableType": "new table: full (default) | insert_only",
    "compression": "new table: zlib (default) | snappy | zstd | lz4 | uncompressed",
    "tableName": "new table: a name (db.table) to find it by",
    STORAGE_OPTIONS_JSON: _STORAGE_JSON_HELP,
}
#: write options that only matter when the write creates the table
CREATE_OPTIONS = ("partitionColumns", "bucketColumns", "numBuckets", "tableType", "compression", "tableName")
PUSHDOWN_MODES = ("auto", "true", "false")


#: Options of ``spark.readStream.format("acidorc")`` (the batch-only ones - snapshots, time
#: travel, filters - are refused: a stream follows commits).
STREAM_READ_OPTIONS = {
    "path": READ_OPTIONS["path"],
    "metastoreUrl": READ_OPTIONS["metastoreUrl"],
    STORAGE_OPTIONS_JSON: _STORAGE_JSON_HELP,
    "startingVersion": "the write id the stream starts at, or 'latest' (only what commits from now on); default: "
                       "the whole table as it is, then its changes",
    "readChangeFeed": "true to stream change rows (_change_type insert/delete, _commit_version, _commit_timestamp), "
                      "updates and deletes included",
    "skipChangeCommits": "true to leave out commits that updated or deleted rows (without readChangeFeed they fail "
                         "the query)",
    "maxWriteIdsPerTrigger": "at most this many committed write ids per micro-batch",
    "maxRowsPerTrigger": "about this many rows per micro-batch (whole write ids: at least one)",
}


#: every option name, by its lower-case spelling (Spark lower-cases them), and the arguments of
#: the core that an option gives under another name
OPTION_NAMES = {name.lower(): name for table in (READ_OPTIONS, WRITE_OPTIONS, STREAM_READ_OPTIONS) for name in table}
OPTION_NAMES.update({"location": "path", "name": "tableName"})


@contextmanager
def option_errors() -> Iterator[None]:
    """The Spark edge: an :class:`InvalidArgumentError` of the core that names a value the user
    gave as an option (``rowFilter``, ``partition``, ``versionAsOf``...) is raised as that
    option's :class:`InvalidOptionError`, with the same message; other errors pass unchanged."""
    try:
        yield
    except InvalidArgumentError as exc:
        name = OPTION_NAMES.get(exc.argument.lower())
        if name is None:
            raise
        raise InvalidOptionError(name, exc.detail) from None


def with_option_errors(fn: F) -> F:
    """:func:`option_errors` around every call of ``fn`` (a generator's iteration included)."""
    import inspect

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def iterate(*args, **kwargs):
            with option_errors():
                yield from fn(*args, **kwargs)

        return iterate  # type: ignore[return-value]  # functools.wraps keeps fn's signature

    @functools.wraps(fn)
    def call(*args, **kwargs):
        with option_errors():
            return fn(*args, **kwargs)

    return call  # type: ignore[return-value]  # functools.wraps keeps fn's signature


def _canonical(options: dict, known: dict[str, str], other: dict[str, str] | None = None) -> dict[str, str]:
    """Map case-insensitive keys to their canonical spelling; reject unknown keys.

    Spark lower-cases option names before we see them, so errors name known options in their
    canonical spelling, and an unknown one with the closest known name. ``other``: the options
    of the other direction (read vs write), to tell a misplaced option from a typo.
    """
    by_lower = {k.lower(): k for k in known}
    out: dict[str, str] = {}
    given_as: dict[str, str] = {}
    for key, value in options.items():
        key = str(key)
        if key.lower().startswith(STORAGE_OPTION_PREFIX):
            out[key] = value
            continue
        canon = by_lower.get(key.lower())
        if canon is None:
            raise InvalidOptionError(key, _unknown_option_message(key, known, other or {}))
        if canon in given_as:
            raise InvalidOptionError(canon, f"given twice (as {given_as[canon]!r} and {key!r})")
        given_as[canon] = key
        out[canon] = value
    return out


def _unknown_option_message(key: str, known: dict[str, str], other: dict[str, str]) -> str:
    valid = ", ".join(sorted(known)) + ", fs.<storage option>"
    misplaced = {k.lower(): k for k in other if k not in known}.get(key.lower())
    if misplaced is not None:
        if known is STREAM_READ_OPTIONS:
            return f"{misplaced!r} is a batch read option, not valid for a streaming read; valid options are: {valid}"
        kind = "read" if known is WRITE_OPTIONS else "write"
        return f"{misplaced!r} is a {kind} option, not valid here; valid options are: {valid}"
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    hint = f"did you mean {by_lower[close[0]]!r}? " if close else ""
    return f"unknown option; {hint}valid options are: {valid}"


def _path(opts: dict, how: str) -> str:
    path = opts.get("path")
    if not path or not str(path).strip():
        raise InvalidOptionError("path", f"the table location is required: {how} or .option('path', ...)")
    return str(path).strip()


def _choice(opts: dict, name: str, choices: tuple[str, ...], default: str) -> str:
    value = str(opts.get(name, default)).strip().lower()
    if value not in choices:
        raise InvalidOptionError(name, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def storage_options_from(options: Mapping[str, str]) -> tuple:
    """The fsspec storage options in Spark-style string options, as sorted ``(key, value)``
    pairs (the form :class:`~acid_source.storage.Storage` takes).

    * ``fs.<name>`` = a string value, e.g. ``fs.key``, ``fs.secret``, ``fs.anon``;
    * ``fs.<name>.<name>...`` = a string value inside nested dicts:
      ``fs.client_kwargs.endpoint_url=http://host:9000`` gives
      ``{"client_kwargs": {"endpoint_url": "http://host:9000"}}``;
    * ``storageOptions`` = a JSON object merged with them, for values that are not strings
      (``{"anon": false}``) or whole nested dicts. Credentials are refused in it (see
      :data:`SECRET_OPTION_NAMES`): Spark redacts options by name, not inside a JSON value.

    The same setting given twice (``fs.client_kwargs`` and ``fs.client_kwargs.region_name``,
    or a key in both forms) is an error naming the options.
    """
    by_lower = {str(k).lower(): k for k in options}
    tree: dict = {}
    origin: dict[tuple[str, ...], str] = {}  # a path in ``tree`` -> the option that set it
    json_key = by_lower.get(STORAGE_OPTIONS_JSON.lower())
    if json_key is not None:
        for path, value in _leaves(_storage_json(options[json_key]), ()):
            _place(tree, origin, path, value, STORAGE_OPTIONS_JSON)
    for key in sorted(str(k) for k in options):
        if not key.lower().startswith(STORAGE_OPTION_PREFIX):
            continue
        path = tuple(key[len(STORAGE_OPTION_PREFIX):].split("."))
        if not all(part.strip() for part in path):
            raise InvalidOptionError(key, "expected fs.<name> or fs.<name>.<name>... (e.g. fs.key, "
                                          "fs.client_kwargs.endpoint_url), with no empty names")
        _place(tree, origin, path, options[key], key)
    return tuple(sorted(tree.items()))


def _storage_json(text) -> dict:
    try:
        value = json.loads(str(text))
    except ValueError as exc:  # the text itself is not echoed: it may hold a secret
        raise InvalidOptionError(STORAGE_OPTIONS_JSON, f"is not valid JSON ({exc.__class__.__name__} at "
                                                       f"character {getattr(exc, 'pos', '?')}); expected "
                                                       f"{_STORAGE_JSON_HELP}") from None
    if not isinstance(value, dict):
        raise InvalidOptionError(STORAGE_OPTIONS_JSON, f"expected {_STORAGE_JSON_HELP}; got a JSON "
                                                       f"{type(value).__name__}")
    return value


def _leaves(value: dict, path: tuple[str, ...]):
    """(path, value) for every non-dict value of a nested dict; secrets refused."""
    if not value and path:
        yield path, {}
    for key, inner in value.items():
        here = path + (str(key),)
        if SECRET_OPTION_NAMES.search(str(key)):
            raise InvalidOptionError(
                STORAGE_OPTIONS_JSON, f"holds the credential {'.'.join(here)!r}: Spark would show it in plans and "
                                      "logs (it redacts options by name, not inside JSON); give it as the option "
                                      f"fs.{'.'.join(here)} instead")
        if isinstance(inner, dict):
            yield from _leaves(inner, here)
        else:
            yield here, inner


def _place(tree: dict, origin: dict, path: tuple[str, ...], value, option: str) -> None:
    node = tree
    for depth, part in enumerate(path):
        prefix = path[:depth + 1]
        if prefix in origin and (depth < len(path) - 1 or not isinstance(node.get(part), dict)):
            raise InvalidOptionError(option, f"sets {'.'.join(path)!r}, which option {origin[prefix]!r} "
                                             "sets already")
        if depth == len(path) - 1:
            if isinstance(node.get(part), dict) and node[part]:
                raise InvalidOptionError(option, f"sets {'.'.join(path)!r}, whose settings other options give")
            node[part] = value
            origin[prefix] = option
        else:
            node = node.setdefault(part, {})


def spark_storage_options(pairs) -> dict[str, str]:
    """The inverse of :func:`storage_options_from`: Spark string options for fsspec storage
    options given in Python (``AcidTable(storageOptions=...)`` handing a read to Spark).
    Strings become ``fs.`` options (nested ones ``fs.a.b``); other values go in the
    ``storageOptions`` JSON, so they keep their type."""
    flat: dict[str, str] = {}
    typed: dict = {}

    def walk(path: tuple[str, ...], value) -> None:
        if isinstance(value, Mapping) and value:
            for k, v in value.items():
                walk(path + (str(k),), v)
        elif isinstance(value, str):
            flat[STORAGE_OPTION_PREFIX + ".".join(path)] = value
        else:  # kept typed in the JSON option
            node = typed
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = dict(value) if isinstance(value, Mapping) else value

    for key, value in pairs:
        walk((str(key),), value)
    if typed:
        flat[STORAGE_OPTIONS_JSON] = json.dumps(typed, sort_keys=True)
    return flat



@with_option_errors
def read_spec(options: Mapping[str, str]) -> ReadSpec:
    """Spark's read options (case-insensitive strings), validated: every error names its
    option."""
    opts = _canonical(dict(options), READ_OPTIONS, WRITE_OPTIONS)
    path = _path(opts, ".load(path)")
    table_type = _choice(opts, "tableType", TABLE_TYPES, "auto")
    pushdown = _choice(opts, "filterPushdown", PUSHDOWN_MODES, "auto")
    partition_filter = opts.get("partitionFilter")
    if partition_filter is not None and not partition_filter.strip():
        raise InvalidOptionError("partitionFilter", "is empty")
    row_filter = opts.get("rowFilter")
    if row_filter is not None and not row_filter.strip():
        raise InvalidOptionError("rowFilter", "is empty")
    chosen = [k for k in ("versionAsOf", "timestampAsOf", "validWriteIds") if k in opts]
    if len(chosen) > 1:
        raise InvalidOptionError(chosen[1], f"give only one of versionAsOf, timestampAsOf and validWriteIds "
                                            f"(got {', '.join(chosen)})")
    change_feed = parse_bool("readChangeFeed", opts.get("readChangeFeed", "false"))
    if change_feed:
        clash = next((k for k in NOT_WITH_CHANGE_FEED if k in opts), None)
        if clash is not None:
            raise InvalidOptionError(clash, "cannot be combined with readChangeFeed (the change feed reads the "
                                            "write ids startingVersion..endingVersion, all partitions and columns)")
    else:
        stray = next((k for k in CHANGE_RANGE_OPTIONS if k in opts), None)
        if stray is not None:
            raise InvalidOptionError(stray, "only applies to the change feed: set readChangeFeed=true as well")
    versions = [parse_version(k, opts[k]) if k in opts else None for k in ("startingVersion", "endingVersion")]
    times = [parse_timestamp(k, opts[k]) if k in opts else None for k in ("startingTimestamp", "endingTimestamp")]
    check_change_range(versions[0], versions[1], times[0], times[1], require_start=False)
    write_ids = None
    if "validWriteIds" in opts:
        write_ids = ValidWriteIdList.parse(opts["validWriteIds"], option="validWriteIds")
    return ReadSpec(
        path=path,
        write_ids=write_ids,
        txns=ValidTxnList.parse(opts["validTxns"], option="validTxns") if "validTxns" in opts else None,
        include_row_id=parse_bool("includeRowId", opts.get("includeRowId", "false")),
        table_type=table_type,
        max_split_bytes=parse_size("maxSplitBytes", opts.get("maxSplitBytes", str(DEFAULT_MAX_SPLIT_BYTES))),
        partition_filter=partition_filter,
        row_filter=row_filter,
        filter_pushdown=pushdown,
        metastore_url=opts.get("metastoreUrl"),
        storage_options=storage_options_from(opts),
        version_as_of=parse_version("versionAsOf", opts["versionAsOf"]) if "versionAsOf" in opts else None,
        timestamp_as_of=(parse_timestamp("timestampAsOf", opts["timestampAsOf"])
                         if "timestampAsOf" in opts else None),
        read_lease_seconds=(parse_seconds("readLeaseSeconds", opts["readLeaseSeconds"])
                            if "readLeaseSeconds" in opts else default_read_lease_seconds()),
        read_change_feed=change_feed,
        native_read=parse_bool("nativeRead", opts.get("nativeRead", "true")),
        starting_version=versions[0],
        ending_version=versions[1],
        starting_timestamp=times[0],
        ending_timestamp=times[1],
    )


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in (value or "").split(",") if c.strip())


def _column_list(opts: dict, option: str) -> tuple[str, ...]:
    """A comma-separated column list; a column named twice is an error (names are
    case-insensitive, as in Hive)."""
    columns = _csv(opts.get(option))
    lowered = [c.lower() for c in columns]
    repeated = sorted({c for c in columns if lowered.count(c.lower()) > 1})
    if repeated:
        raise InvalidOptionError(option, f"columns repeat: {', '.join(repeated)}")
    return columns


@with_option_errors
def write_spec(options: Mapping[str, str]) -> WriteSpec:
    """Spark's write options (case-insensitive strings), validated: every error names its
    option; ``partition`` (``ds=2026-11-21/region=eu``) becomes column-value pairs."""
    opts = _canonical(dict(options), WRITE_OPTIONS, READ_OPTIONS)
    path = _path(opts, ".save(path)")
    mode = _choice(opts, "partitionOverwriteMode", ("static", "dynamic"), "static")
    table_type = _choice(opts, "tableType", ("full", "insert_only"), "full")
    compression = canonical_codec(opts.get("compression", DEFAULT_CODEC))
    partition_columns = _column_list(opts, "partitionColumns")
    bucket_columns = _column_list(opts, "bucketColumns")
    both = sorted({c.lower() for c in partition_columns} & {c.lower() for c in bucket_columns})
    if both:
        raise InvalidOptionError("bucketColumns", f"{', '.join(both)} cannot be both a partition column "
                                 "and a bucket column")
    num_buckets = 0
    if "numBuckets" in opts:
        try:
            num_buckets = int(opts["numBuckets"])
        except ValueError:
            raise InvalidOptionError(
                "numBuckets", f"expected a positive integer, got {opts['numBuckets']!r}") from None
        if not 1 <= num_buckets <= 4096:
            raise InvalidOptionError("numBuckets", "must be between 1 and 4096")
    if bool(bucket_columns) != bool(num_buckets):
        raise InvalidOptionError("numBuckets" if bucket_columns else "bucketColumns",
                                 "bucketColumns and numBuckets go together")
    return WriteSpec(
        path=path,
        metastore_url=opts.get("metastoreUrl"),
        partition=parse_partition_spec(opts["partition"]) if "partition" in opts else None,
        dynamic_overwrite=mode == "dynamic",
        partition_columns=partition_columns,
        bucket_columns=bucket_columns,
        num_buckets=num_buckets,
        insert_only=table_type == "insert_only",
        compression=compression,
        table_name=opts.get("tableName"),
        storage_options=storage_options_from(opts),
        given=frozenset(k for k in CREATE_OPTIONS if k in opts),
    )


def _positive_int(opts: dict, name: str) -> int | None:
    if name not in opts:
        return None
    try:
        value = int(str(opts[name]).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidOptionError(name, f"expected an integer >= 1, got {opts[name]!r}")
    return value


@with_option_errors
def stream_read_spec(options: Mapping[str, str]) -> StreamReadSpec:
    """Spark's streaming read options, validated: every error names its option."""
    opts = _canonical(dict(options), STREAM_READ_OPTIONS, READ_OPTIONS)
    start: int | str | None = None
    if "startingVersion" in opts:
        text = str(opts["startingVersion"]).strip().lower()
        start = "latest" if text == "latest" else parse_version("startingVersion", opts["startingVersion"])
        if start == 0:
            raise InvalidOptionError("startingVersion", "write ids start at 1")
    return StreamReadSpec(
        path=_path(opts, ".load(path)"),
        metastore_url=opts.get("metastoreUrl"),
        storage_options=storage_options_from(opts),
        starting_version=start,
        read_change_feed=parse_bool("readChangeFeed", opts.get("readChangeFeed", "false")),
        skip_change_commits=parse_bool("skipChangeCommits", opts.get("skipChangeCommits", "false")),
        max_write_ids_per_trigger=_positive_int(opts, "maxWriteIdsPerTrigger"),
        max_rows_per_trigger=_positive_int(opts, "maxRowsPerTrigger"),
    )
