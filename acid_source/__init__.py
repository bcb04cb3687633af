"""acidorc: Hive ACID (transactional ORC) tables from PySpark and from plain Python.

The public names: ``AcidTable`` (load / create / forPath / forName; scan, append, overwrite,
newWrite, update, delete, merge, compact, vacuum, history, changes), ``AcidScan`` and
``StagedWrite`` (what a scan and a staged write hand back), ``read`` / ``sql`` / ``register`` /
``get_or_create_session`` (Spark), ``create_table`` / ``drop_table`` / ``vacuum`` /
``compact_table`` / ``run_initiator`` / ``clean_aborted_writes``, the snapshot strings
``ValidWriteIdList`` / ``ValidTxnList``, and every error of :mod:`acid_source.errors`. They are
spelled like pyspark and delta-spark (camelCase); internal modules are snake_case.
"""

from ._version import __version__ as __version__
from .errors import (
    AcidError,
    BatchAlreadyCommittedError,
    ConflictError,
    CorruptFileError,
    HistoryUnavailableError,
    InvalidArgumentError,
    InvalidOptionError,
    InvalidSnapshotError,
    LockTimeoutError,
    MergeCardinalityError,
    MetastoreError,
    MetastoreNotFoundError,
    MetastoreUnreachableError,
    MissingDataError,
    NoSuchTableError,
    NotAnAcidTableError,
    NotEnoughHistoryError,
    PathError,
    SchemaError,
    SnapshotFilesRemovedError,
    StorageError,
    StoreBehindStorageError,
    TableExistsError,
    TableLocationNotFoundError,
    TableNotFoundError,
    TableNotRegisteredError,
    TransactionStateError,
    UnsafePathError,
    UnsupportedOperationError,
    VersionNotFoundError,
)
from .layout.writeids import ValidTxnList, ValidWriteIdList

# Driver-side entry points load on first use: a Spark task imports this package too (to reach
# acid_source.spark.datasource) and must not pay for, or depend on, the transaction store.
_LAZY = {
    "AcidTable": "table",
    "AcidScan": "scans",
    "StagedWrite": "staged",
    "clean_aborted_writes": "maintenance.aborted",
    "configure": "spark.session",
    "get_or_create_session": "spark.session",
    "register": "spark.session",
    "sql": "spark.sql",
    "read": "spark.native_read",
    "compact_table": "maintenance.compactor",
    "vacuum": "maintenance.cleaner",
    "run_initiator": "maintenance.initiator",
    "create_table": "tables",
    "drop_table": "tables",
}


#: names that were public once and are going (each warns; the value says what replaces it)
_DEPRECATED = {
    "Transaction": ("txn", "AcidTable.newWrite (a staged write: tasks anywhere, one commit); the transaction "
                           "class itself is internal, acid_source.txn.Transaction"),
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None and name in _DEPRECATED:
        from .deprecation import warn

        module, instead = _DEPRECATED[name]
        warn(f"acid_source.{name}", instead)
        import importlib

        return getattr(importlib.import_module(f".{module}", __name__), name)
    if module is None:
        raise AttributeError(f"module 'acid_source' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "AcidScan",
    "AcidTable",
    "StagedWrite",
    "clean_aborted_writes",
    "create_table",
    "drop_table",
    "ValidTxnList",
    "ValidWriteIdList",
    "configure",
    "read",
    "get_or_create_session",
    "register",
    "sql",
    "compact_table",
    "vacuum",
    "run_initiator",
    # the errors, every one of acid_source.errors
    "AcidError",
    "BatchAlreadyCommittedError",
    "ConflictError",
    "CorruptFileError",
    "HistoryUnavailableError",
    "InvalidArgumentError",
    "InvalidOptionError",
    "InvalidSnapshotError",
    "MergeCardinalityError",
    "MetastoreError",
    "LockTimeoutError",
    "MetastoreNotFoundError",
    "MetastoreUnreachableError",
    "MissingDataError",
    "NoSuchTableError",
    "NotAnAcidTableError",
    "NotEnoughHistoryError",
    "PathError",
    "SchemaError",
    "SnapshotFilesRemovedError",
    "StorageError",
    "StoreBehindStorageError",
    "TableExistsError",
    "TableLocationNotFoundError",
    "TableNotFoundError",
    "TableNotRegisteredError",
    "TransactionStateError",
    "UnsafePathError",
    "UnsupportedOperationError",
    "VersionNotFoundError",
]
