"""Streaming sinks' micro-batch marks: which transaction committed batch ``batch_id`` of sink
``sink_id`` (a Structured Streaming query's identity, which stays the same across restarts).

:meth:`~acid_source.metastore.sql.transactions.TransactionsMixin.commit` with ``sink=(sink_id,
batch_id)`` records the mark in the commit's own database transaction; a batch recorded already
makes that commit abort instead (:class:`~acid_source.errors.BatchAlreadyCommittedError`). So a
micro-batch Spark replays after a crash between the store's commit and its own commit log
commits nothing twice, and one whose commit never happened is committed by the replay: exactly
once. This module keeps the table (created on first use in stores made before it existed) and
answers what a restarted sink asks.
"""

from __future__ import annotations

from sqlalchemy import func, insert, select

from ..arguments import batch_id_arg, sink_id_arg
from .base import StoreBase
from .schema import sink_batches

#: The abort reason of a commit refused because its batch was committed already.
SINK_REASON = "micro-batch committed already: "


class SinksMixin(StoreBase):
    """Micro-batch marks of streaming sinks (read side; :meth:`commit` writes them)."""

    def sink_batch(self, sink_id: str, batch_id: int) -> int | None:
        """The transaction that committed batch ``batch_id`` of sink ``sink_id``, or None."""
        sink_id, batch_id = sink_id_arg(sink_id), batch_id_arg(batch_id)
        return self._run_sinks(lambda conn: self._sink_winner(conn, sink_id, batch_id), write=False,
                               what=f"read micro-batch {batch_id} of sink {sink_id!r}")

    def last_sink_batch(self, sink_id: str) -> int | None:
        """The highest batch id committed for sink ``sink_id``, or None (nothing committed)."""
        sink_id = sink_id_arg(sink_id)
        return self._run_sinks(
            lambda conn: conn.execute(select(func.max(sink_batches.c.batch_id))
                                      .where(sink_batches.c.sink_id == sink_id)).scalar(),
            write=False, what=f"read the last micro-batch of sink {sink_id!r}")

    # --- inside a commit's database transaction ------------------------------------------------
    @staticmethod
    def _sink_winner(conn, sink_id: str, batch_id: int) -> int | None:
        return conn.execute(select(sink_batches.c.txn_id).where(
            sink_batches.c.sink_id == sink_id, sink_batches.c.batch_id == batch_id)).scalar()

    @staticmethod
    def _record_sink_batch(conn, sink_id: str, batch_id: int, txn_id: int, table_id: int, now: float) -> None:
        conn.execute(insert(sink_batches).values(sink_id=sink_id, batch_id=batch_id, txn_id=txn_id,
                                                 table_id=table_id, committed_at=now))

    # --- the table in stores created before sinks existed --------------------------------------
    def _run_sinks(self, fn, *, write: bool, what: str):
        return self._run_with(sink_batches, "sink batch", fn, write=write, what=what)


__all__ = ["SINK_REASON", "SinksMixin"]
