"""One exception hierarchy for acidorc.

Every error a user can see derives from :class:`AcidError`, so ``except AcidError`` catches
anything the connector raises on purpose. Errors about bad arguments also derive from
``ValueError`` and missing paths from ``FileNotFoundError``, so generic handlers keep working.
Each error names the path or option it is about.
"""

from __future__ import annotations


class AcidError(Exception):
    """Base class of every error raised by acidorc.

    Errors pickle as their finished message plus their attributes and unpickle without calling
    ``__init__`` again: Spark, multiprocessing and concurrent.futures move errors between
    processes, and the default ``Exception.__reduce__`` would call ``cls(*self.args)``, i.e.
    pass the formatted message where the constructor expects its first fact (a path, an
    option), and fail when the constructor takes more than one argument. ``OSError`` (of
    :class:`TableLocationNotFoundError`) is no different: its reduce also hands ``args`` back to
    ``__init__``, so the message came back prefixed twice.
    """

    def __reduce__(self):
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type, args: tuple, state: dict) -> AcidError:
    """The unpickled twin of an error: same class, message (``args``) and attributes."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class InvalidOptionError(AcidError, ValueError):
    """An option (of a Spark read or write, or a setting) is unknown, malformed or contradicts
    another one. The core names values as arguments; the Spark edge reports an argument of an
    option's name as that option (:func:`acid_source.spark.options.option_errors`)."""

    def __init__(self, option: str, message: str):
        self.option = option
        self.detail = message
        super().__init__(f"option '{option}': {message}")


class InvalidArgumentError(AcidError, ValueError):
    """A function argument of acidorc's Python API is malformed (options have
    :class:`InvalidOptionError`)."""

    def __init__(self, argument: str, message: str):
        self.argument = argument
        self.detail = message
        super().__init__(f"argument '{argument}': {message}")


class InvalidSnapshotError(AcidError, ValueError):
    """A ValidWriteIdList / ValidTxnList string cannot be parsed."""

    def __init__(self, text: str, message: str, option: str | None = None):
        self.text = text
        self.option = option
        where = f"option '{option}': " if option else ""
        super().__init__(f"{where}cannot parse {text!r}: {message}")


class TableLocationNotFoundError(AcidError, FileNotFoundError):
    """Nothing exists in storage at the table's location (compare
    :class:`TableNotRegisteredError`: the transaction store does not know the table)."""

    def __init__(self, path: str):
        self.path = path
        super().__init__(f"table path does not exist: {path}")


class PathError(AcidError):
    """An error about one path, for one reason; both stay on the error (``path``, ``reason``)
    for handlers, and subclasses differ only in how the message reads."""

    _template = "{path}: {reason}"

    def __init__(self, path: str, reason: str):
        self.path, self.reason = path, reason
        super().__init__(self._template.format(path=path, reason=reason))


class NotAnAcidTableError(PathError):
    """The path exists but does not hold a Hive ACID table."""

    _template = "{path} is not a Hive ACID table: {reason}"


class UnsafePathError(PathError):
    """A path inside the table leads outside the table root (a symbolic link, or a name that
    would climb out); acidorc never reads or writes there."""


class StorageError(PathError):
    """A file operation on the table's storage failed (permissions, a full disk, a vanished
    mount); the message names the path and what acidorc was doing."""


class CorruptFileError(PathError):
    """A data or metadata file cannot be read or contradicts the ACID format."""

    _template = "cannot read {path}: {reason}"


class MissingDataError(CorruptFileError):
    """Storage lacks the files of committed writes: the transaction store says write ids were
    committed into a data object, and no directory holding them is there, even in a second
    listing without caches. Storage lost data or was changed outside acidorc; acidorc refuses to
    return the table without those rows, or to compact it into a version without them."""

    def __init__(self, path: str, write_ids: list[int], detail: str = ""):
        self.write_ids = list(write_ids)
        shown = ", ".join(map(str, self.write_ids[:10])) + (" ..." if len(self.write_ids) > 10 else "")
        super().__init__(path, f"committed write id(s) {shown} have no directory holding them in storage, "
                               f"listed twice without caches{detail}. The transaction store recorded them as "
                               "committed here, so storage lost data or was changed outside acidorc")


class NotEnoughHistoryError(AcidError):
    """The snapshot predates the oldest compacted base: the data it needs was compacted away.

    Hive reports the same condition as ACID_NOT_ENOUGH_HISTORY.
    """

    def __init__(self, path: str, base: str, snapshot: str, *, version: int | None = None,
                 oldest_version: int | None = None):
        self.path, self.base, self.snapshot = path, base, snapshot
        #: for time travel: the version asked for, and the oldest one the files left can serve
        self.version, self.oldest_version = version, oldest_version
        asked = "" if version is None else f" of version {version}"
        oldest = "" if oldest_version is None else f"; the oldest version that can still be read is {oldest_version}"
        super().__init__(
            f"{path}: the snapshot {snapshot!r}{asked} is older than the compacted base {base}; "
            f"the history it needs is gone (ACID_NOT_ENOUGH_HISTORY){oldest}"
        )


class HistoryUnavailableError(AcidError):
    """The change feed (``readChangeFeed`` / ``AcidTable.changes``) asked for a write id whose
    change events are gone: a major compaction folded its directories into a base (which keeps
    no delete events, nor the rows deleted before it) and the cleaner removed them. Returning
    fewer changes would be silent data loss, so the read stops. ``location`` names the table,
    ``write_id`` the first write id whose history is gone, ``options`` what was asked for,
    ``partition`` the data object and ``directory`` what holds the write id now (if anything)."""

    def __init__(self, location: str, write_id: int, options: str, *, partition: str = "",
                 directory: str | None = None):
        self.location, self.write_id, self.options = location, write_id, options
        self.partition, self.directory = partition, directory
        where = f" in {partition}" if partition else ""
        now = f" (it is folded into {directory})" if directory else ""
        super().__init__(
            f"{location}: the change feed for {options} needs the delta directories of write id {write_id}"
            f"{where}, and compaction and the cleaner removed them{now}; changes are only available from "
            "write ids whose deltas are still on storage (read a later range, or keep deltas longer: "
            "vacuum's retentionSeconds, fewer major compactions)")


class SnapshotFilesRemovedError(AcidError, FileNotFoundError):
    """A file or directory the read's snapshot selected is gone: the cleaner (``vacuum``)
    removed it after the read's lease expired (or before the read took one). The read stops
    instead of returning rows without it; reading the table again takes a fresh snapshot."""

    def __init__(self, path: str):
        self.path = path
        super().__init__(
            f"{path} is gone, but the read's snapshot needs it: the cleaner removed it after the read's "
            "lease expired (a Spark DataFrame's lease lasts readLeaseSeconds from when it was planned). "
            "Re-read the table (build the DataFrame or scan again) to read its current snapshot")


class SchemaError(AcidError):
    """A schema cannot be inferred, parsed, converted or reconciled.

    Keyword-only context, where known: the ``path`` of the table or file, the ``column`` at
    fault, and the ``position`` (0-based character offset) in a schema string.
    """

    def __init__(self, message: str, *, path: str | None = None, column: str | None = None,
                 position: int | None = None):
        self.path, self.column, self.position = path, column, position
        super().__init__(message)


class MetastoreError(AcidError):
    """The transaction store cannot be reached or refused an operation.

    Subclasses take the finished message as their only positional argument and the facts it
    names as keyword-only attributes, so they pickle and unpickle across processes unchanged.
    """

    def __init__(self, message: str, *, url: str | None = None):
        self.url = url
        super().__init__(message)


class TableNotRegisteredError(MetastoreError, LookupError):
    """The transaction store has no table under the location, name or id that was asked for
    (compare :class:`TableLocationNotFoundError`: nothing in storage at the location)."""

    def __init__(self, message: str | None = None, *, location: str | None = None,
                 name: str | None = None, table_id: int | None = None):
        self.location, self.name, self.table_id = location, name, table_id
        if message is None:
            asked = [f"{k} {v!r}" for k, v in (("location", location), ("name", name), ("id", table_id))
                     if v is not None]
            message = f"no table registered in the metastore with {' and '.join(asked) or 'no key'}"
        super().__init__(message)


class TableExistsError(MetastoreError):
    """A table is already registered at that location or under that name."""

    def __init__(self, message: str, *, location: str | None = None, name: str | None = None):
        self.location, self.name = location, name
        super().__init__(message)


class TransactionStateError(MetastoreError):
    """The transaction is unknown or not in a state that allows the operation."""

    def __init__(self, message: str, *, txn_id: int | None = None, state: str | None = None):
        self.txn_id, self.state = txn_id, state
        super().__init__(message)


class StoreBehindStorageError(MetastoreError):
    """The transaction store is behind the table's storage: directories of write ids (or
    compaction outputs) it never handed out are already there - it was restored from an older
    copy, or the table was dropped without ``purge`` and created again. A write would reuse
    them and mix its rows with a history the store lost (lost appends come back, lost deletes
    hit live rows), so every write refuses before any file is written and leaves the table as
    it was. ``location`` names the table, ``write_id`` the write id that would have been used,
    ``directories`` the ones already there. To recover, register the history on storage:
    ``drop_table(location)`` (without purge), then ``create_table(location, schema, ...,
    adopt=True)``; or write to a new location."""

    def __init__(self, message: str, *, location: str | None = None, write_id: int | None = None,
                 directories: tuple[str, ...] = (), url: str | None = None):
        self.location, self.write_id, self.directories = location, write_id, tuple(directories)
        super().__init__(message, url=url)


class MetastoreNotFoundError(MetastoreError):
    """A transaction store was named explicitly but does not exist (a reader never creates one:
    it would treat every write id on disk as committed)."""


class MetastoreUnreachableError(MetastoreError):
    """No Hive Metastore named by the store URL answered (every URI was tried). Nothing was
    committed by the call that raised it; ``url`` names the URIs."""


class LockTimeoutError(MetastoreError):
    """A Hive Metastore lock was not granted in time: another transaction holds a lock that
    conflicts (Hive's ``DbTxnManager`` rules). The transaction was aborted and nothing it wrote
    is visible; ``table`` names the table, ``url`` the metastore, ``blocker`` what the metastore
    reported as waiting on, when it said."""

    def __init__(self, message: str, *, table: str | None = None, url: str | None = None,
                 blocker: str | None = None):
        self.table, self.blocker = table, blocker
        super().__init__(message, url=url)


class VersionNotFoundError(AcidError, LookupError):
    """A table version asked for (time travel) does not exist: the write id is not committed,
    or the time is before the table's first commit.

    Takes the finished message as its only positional argument and the facts it names as
    keyword-only attributes, so it pickles unchanged."""

    def __init__(self, message: str, *, table_id: int | None = None, write_id: int | None = None,
                 timestamp: float | None = None, earliest_commit_time: float | None = None):
        self.table_id, self.write_id = table_id, write_id
        self.timestamp, self.earliest_commit_time = timestamp, earliest_commit_time
        super().__init__(message)


class ConflictError(AcidError):
    """A concurrent commit changed the data this transaction read; it was aborted.

    The losing side of a write conflict; retrying the whole operation on a fresh snapshot is
    the remedy. ``location`` and ``partition`` name the data object ("" for an unpartitioned
    table), ``committed_txn_id`` / ``committed_write_id`` the winning commit (its write id on
    this table; None for a commit without one, e.g. a compaction), and ``row_id`` the row
    both changed, as (originalTransaction, bucket, rowId), when row-level detection found one.
    """

    def __init__(self, message: str, *, txn_id: int | None = None, committed_txn_id: int | None = None,
                 location: str | None = None, partition: str | None = None,
                 committed_write_id: int | None = None, row_id: tuple[int, int, int] | None = None):
        self.txn_id, self.committed_txn_id, self.committed_write_id = txn_id, committed_txn_id, committed_write_id
        self.location, self.partition, self.row_id = location, partition, row_id
        super().__init__(message)


class BatchAlreadyCommittedError(ConflictError):
    """A streaming sink's micro-batch (``sink_id``, ``batch_id``) was committed already, by
    transaction ``committed_txn_id``: the store aborted this transaction (``txn_id``) in the
    same database transaction that would have committed it, so a batch replayed after a crash
    or restart never commits twice. Its files are removed; the sink treats the batch as done."""

    def __init__(self, sink_id: str, batch_id: int, *, committed_txn_id: int | None = None,
                 txn_id: int | None = None):
        self.sink_id, self.batch_id = sink_id, batch_id
        by = f" by transaction {committed_txn_id}" if committed_txn_id is not None else ""
        aborted = f"; transaction {txn_id} was aborted instead and its files removed" if txn_id is not None else ""
        super().__init__(f"sink {sink_id!r}: batch {batch_id} was committed already{by}{aborted} "
                         "(a replayed micro-batch commits nothing twice)",
                         txn_id=txn_id, committed_txn_id=committed_txn_id)


class MergeCardinalityError(AcidError):
    """A MERGE matched one target row with more than one source row (Spark SQL's
    MERGE_CARDINALITY_VIOLATION rule): which source row should win is undefined, so the MERGE
    fails and writes nothing."""

    def __init__(self, condition: str, location: str, row_id: str):
        self.condition, self.location, self.row_id = condition, location, row_id
        super().__init__(
            f"MERGE into {location}: the target row {row_id} matched more than one source row on the "
            f"condition {condition!r}; make the source unique on the join keys (for example with "
            "dropDuplicates) or tighten the condition. Nothing was written")


class UnsupportedOperationError(AcidError, NotImplementedError):
    """acidorc does not (yet) do what was asked, e.g. a streaming read."""

    def __init__(self, operation: str, message: str):
        self.operation = operation
        super().__init__(f"{operation}: {message}")


# The names before the rename, bound to the same classes: ``except TableNotFoundError`` keeps
# catching what it caught.
TableNotFoundError = TableLocationNotFoundError
NoSuchTableError = TableNotRegisteredError
