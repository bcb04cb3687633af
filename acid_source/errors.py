"""One exception hierarchy for acidorc.

Every error a user can see derives from :class:`AcidError`, so ``except AcidError`` catches
anything the connector raises on purpose. Errors about bad arguments also derive from
``ValueError`` and missing paths from ``FileNotFoundError``, so generic handlers keep working.
Each error names the path or option it is about.
"""

from __future__ import annotations


class AcidError(Exception):
    """Base class of every error raised by acidorc."""


class InvalidOptionError(AcidError, ValueError):
    """An option is unknown, malformed or contradicts another one."""

    def __init__(self, option: str, message: str):
        self.option = option
        super().__init__(f"option '{option}': {message}")


class InvalidSnapshotError(AcidError, ValueError):
    """A ValidWriteIdList / ValidTxnList string cannot be parsed."""

    def __init__(self, text: str, message: str, option: str | None = None):
        self.text = text
        self.option = option
        where = f"option '{option}': " if option else ""
        super().__init__(f"{where}cannot parse {text!r}: {message}")


class TableNotFoundError(AcidError, FileNotFoundError):
    """The table path does not exist."""

    def __init__(self, path: str):
        self.path = path
        super().__init__(f"table path does not exist: {path}")


class NotAnAcidTableError(AcidError):
    """The path exists but does not hold a Hive ACID table."""

    def __init__(self, path: str, reason: str):
        self.path = path
        super().__init__(f"{path} is not a Hive ACID table: {reason}")


class CorruptFileError(AcidError):
    """A data or metadata file cannot be read or contradicts the ACID format."""

    def __init__(self, path: str, reason: str):
        self.path = path
        super().__init__(f"cannot read {path}: {reason}")


class NotEnoughHistoryError(AcidError):
    """The snapshot predates the oldest compacted base: the data it needs was compacted away.

    Hive reports the same condition as ACID_NOT_ENOUGH_HISTORY.
    """

    def __init__(self, path: str, base: str, snapshot: str):
        self.path = path
        super().__init__(
            f"{path}: the snapshot {snapshot!r} is older than the compacted base {base}; "
            "the history it needs is gone (ACID_NOT_ENOUGH_HISTORY)"
        )


class SchemaError(AcidError):
    """A schema cannot be inferred, converted or reconciled."""


class MetastoreError(AcidError):
    """The transaction store cannot be reached or refused an operation.

    Subclasses take the finished message as their only positional argument and the facts it
    names as keyword-only attributes, so they pickle and unpickle across processes unchanged.
    """

    def __init__(self, message: str, *, url: str | None = None):
        self.url = url
        super().__init__(message)


class NoSuchTableError(MetastoreError, LookupError):
    """No table is registered under the location, name or id that was asked for."""

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


class ConflictError(AcidError):
    """A concurrent commit changed the data this transaction read; it was aborted.

    The losing side of a write conflict; retrying the whole operation on a fresh snapshot is
    the remedy.
    """

    def __init__(self, message: str, *, txn_id: int | None = None, committed_txn_id: int | None = None,
                 location: str | None = None, partition: str | None = None):
        self.txn_id, self.committed_txn_id = txn_id, committed_txn_id
        self.location, self.partition = location, partition
        super().__init__(message)
