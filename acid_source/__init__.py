"""acidorc: read (and write) Hive ACID transactional ORC tables from PySpark."""

from .errors import (
    AcidError,
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

__version__ = "0.1.0"

__all__ = [
    "AcidError",
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
