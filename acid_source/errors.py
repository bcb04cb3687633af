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
