"""Read leases in a Hive Metastore: a lease is a transaction the reader holds open, which is
how Hive's own readers keep its cleaner away; the cleaner's view follows from the open
transactions."""

from __future__ import annotations

import dataclasses

from ...errors import TransactionStateError
from ...layout.writeids import ValidTxnList, ValidWriteIdList
from ..arguments import lease_ttl
from ..leases import CleanerView, Lease
from .transactions import TransactionsMixin


class LeasesMixin(TransactionsMixin):
    """Leases as open transactions, and the cleaner's view of a table."""

    def acquire_lease(self, table_id: int, write_ids: ValidWriteIdList | str, txns: ValidTxnList | str,
                      ttl_seconds: float, holder: str = "") -> Lease:
        """An open transaction held for the read (Hive's cleaner waits for it); its id is the
        lease id, renewing it is a heartbeat and releasing it a commit of nothing."""
        ttl = lease_ttl(ttl_seconds)
        txn_id = self.open_transaction(description=f"read lease {holder}".strip())
        now = self.clock()
        lease = Lease(lease_id=str(txn_id), table_id=int(table_id),
                      write_ids=write_ids if isinstance(write_ids, ValidWriteIdList)
                      else ValidWriteIdList.parse(write_ids),
                      txns=txns if isinstance(txns, ValidTxnList) else ValidTxnList.parse(txns),
                      holder=holder, acquired_at=now, renewed_at=now, ttl_seconds=ttl)
        self._leases[lease.lease_id] = lease
        return lease

    def renew_lease(self, lease_id: str) -> Lease | None:
        """The lease renewed; None once the HMS aborted its transaction (heartbeats too late)."""
        try:
            self.heartbeat(int(lease_id))
        except TransactionStateError:
            self._leases.pop(lease_id, None)
            return None
        lease = self._leases.get(lease_id)
        if lease is None:
            return None
        lease = dataclasses.replace(lease, renewed_at=self.clock())
        self._leases[lease_id] = lease
        return lease

    def release_lease(self, lease_id: str) -> None:
        """Commit the lease's transaction (it wrote nothing); one the HMS aborted meanwhile does nothing."""
        tt = self._ttypes()
        self._leases.pop(lease_id, None)
        try:
            self._call("commit_txn", tt.CommitTxnRequest(txnid=int(lease_id)))
        except (tt.NoSuchTxnException, tt.TxnAbortedException):
            pass  # timed out meanwhile: nothing to release

    def live_leases(self, table_id: int) -> list[Lease]:
        """None: the HMS records open transactions, not which table or snapshot they read."""
        return []

    def purge_expired_leases(self) -> int:
        """0: the HMS aborts the transactions of expired leases itself (``hive.txn.timeout``)."""
        return 0

    def cleaner_view(self, table_id: int, *, retention_seconds: float, txn_timeout_seconds: float) -> CleanerView:
        """The cleaner's view, from the HMS: every reader of Hive's (and acidorc's, by its
        lease) holds an open transaction, and the HMS does not say which snapshot an open one
        reads. So while any transaction is open, the floor is the empty snapshot (nothing is
        obsolete under it: only aborted directories go); once none is, the floor is the latest
        snapshot. Hive's own cleaner waits the same way, on the lowest open transaction."""
        write_ids, txns = self.snapshot(table_id)
        latest = (write_ids, txns)
        floor = latest
        if txns.open_ids:
            floor = (ValidWriteIdList(high_watermark=0, table_name=write_ids.table_name),
                     ValidTxnList(high_watermark=0))
        return CleanerView(now=self.clock(), latest=latest, floor=floor, leases=(),
                           aborted_write_ids=frozenset(write_ids.aborted_ids),
                           aborted_txn_ids=frozenset(txns.aborted_ids))

