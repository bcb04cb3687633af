"""The Hive Metastore's snapshots (``get_open_txns`` + ``get_valid_write_ids``, as Hive's
driver builds them). The HMS keeps no commit history: time travel and ``history`` are refused
with :class:`~acid_source.errors.UnsupportedOperationError`, and the newest version is read off
the snapshot."""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import InvalidArgumentError, MetastoreError, UnsupportedOperationError
from ...layout.writeids import ValidTxnList, ValidWriteIdList
from ..constants import ABORTED, OPEN, TXN_STATES
from ..records import Snapshot
from .catalog import CatalogMixin
from .convert import valid_txns, valid_write_ids


class SnapshotsMixin(CatalogMixin):
    """What a reader may see now, from the HMS."""

    def snapshot(self, table_id: int, *, for_txn: int | None = None) -> Snapshot:
        """``(ValidWriteIdList, ValidTxnList)`` as Hive's driver builds them: the open and
        aborted transactions first (as transaction ``for_txn`` sees them), then the table's
        write ids under exactly that list."""
        tt = self._ttypes()
        name = self._name_of(table_id)
        txns = valid_txns(self._call("get_open_txns"), int(for_txn or 0))
        request = tt.GetValidWriteIdsRequest(fullTableNames=[name], validTxnList=str(txns))
        try:
            response = self._call("get_valid_write_ids", request)
        except tt.NoSuchTxnException as exc:
            raise MetastoreError(f"the Hive Metastore at {self.url}: {exc.message}", url=self.url) from None
        write_ids = valid_write_ids(response.tblValidWriteIds[0])
        mine = self._write_ids.get((int(for_txn or 0), int(table_id)))
        if mine is not None:  # a transaction sees its own writes
            write_ids = write_ids.with_valid([mine])
        return write_ids, txns

    def valid_write_ids(self, table_id: int, *, for_txn: int | None = None) -> ValidWriteIdList:
        """The table's write ids now, as :meth:`snapshot` reads them."""
        return self.snapshot(table_id, for_txn=for_txn)[0]

    def valid_txns(self, *, for_txn: int | None = None) -> ValidTxnList:
        """The HMS's open and aborted transactions now, as transaction ``for_txn`` sees them."""
        return valid_txns(self._call("get_open_txns"), int(for_txn or 0))

    def write_ids_of(self, table_id: int, state: str) -> list[int]:
        """Open or aborted write ids (the HMS lists those below the high-water mark); committed
        ones are everything else up to it."""
        if state not in TXN_STATES:
            raise InvalidArgumentError("state", f"expected one of {', '.join(TXN_STATES)}, got {state!r}")
        write_ids, _ = self.snapshot(table_id)
        if state == OPEN:
            return list(write_ids.open_ids)
        if state == ABORTED:
            return list(write_ids.aborted_ids)
        invalid = set(write_ids.open_ids) | set(write_ids.aborted_ids)
        return [w for w in range(1, write_ids.high_watermark + 1) if w not in invalid]

    def committed_writes(self, table_id: int, *, above: int = 0,
                         partitions: Iterable[str] | None = None) -> tuple[set[str], dict[str, list[int]]]:
        """Nothing: the HMS does not record which partitions a committed write id wrote, so
        a listing cannot be proven complete against it (object stores list consistently today;
        the check stays for acidorc's own store)."""
        return set(), {}

    def history(self, table_id: int, limit: int | None = None) -> list[dict]:
        """Refused: the HMS keeps no commit history."""
        raise UnsupportedOperationError(
            "history", f"the Hive Metastore at {self.url} keeps no commit history of {self._name_of(table_id)}; "
            "acidorc's own store does (time travel and history need it)")

    def snapshot_as_of(self, table_id: int, write_id: int) -> Snapshot:
        """Refused: time travel needs a commit history."""
        raise UnsupportedOperationError(
            "versionAsOf", f"time travel needs a commit history, and the Hive Metastore at {self.url} keeps none "
            f"for {self._name_of(table_id)}; pass validWriteIds to read an explicit snapshot")

    def write_id_as_of_time(self, table_id: int, timestamp: float) -> int:
        """Refused: time travel needs a commit history."""
        raise UnsupportedOperationError(
            "timestampAsOf", f"time travel needs a commit history, and the Hive Metastore at {self.url} keeps "
            f"none for {self._name_of(table_id)}")

    def latest_version(self, table_id: int, write_ids: ValidWriteIdList) -> int:
        """The newest committed write id in ``write_ids`` (0: none)."""
        invalid = set(write_ids.open_ids) | set(write_ids.aborted_ids)
        return next((w for w in range(write_ids.high_watermark, 0, -1) if w not in invalid), 0)
