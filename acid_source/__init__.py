"""acidorc: read (and write) Hive ACID transactional ORC tables from PySpark."""

from .errors import (
    AcidError,
    ConflictError,
    MetastoreError,
    NoSuchTableError,
    TableExistsError,
    TransactionStateError,
    CorruptFileError,
    InvalidOptionError,
    InvalidSnapshotError,
    NotAnAcidTableError,
    NotEnoughHistoryError,
    SchemaError,
    TableNotFoundError,
)
from .layout.writeids import ValidTxnList, ValidWriteIdList
from .session import configure, get_or_create_session, register
from .tables import create_table
from .write.cleanup import clean_aborted_writes

__version__ = "0.1.0"

__all__ = [
    "AcidError",
    "ConflictError",
    "MetastoreError",
    "NoSuchTableError",
    "TableExistsError",
    "TransactionStateError",
    "clean_aborted_writes",
    "create_table",
    "CorruptFileError",
    "InvalidOptionError",
    "InvalidSnapshotError",
    "NotAnAcidTableError",
    "NotEnoughHistoryError",
    "SchemaError",
    "TableNotFoundError",
    "ValidTxnList",
    "ValidWriteIdList",
    "configure",
    "get_or_create_session",
    "register",
]
