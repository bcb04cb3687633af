"""Streaming sinks' micro-batch marks: which transaction committed batch ``batch_id`` of sink
``sink_id`` (a Structured Streaming query's identity, which stays the same across restarts).

:meth:`~acid_source.metastore.transactions.TransactionsMixin.commit` with ``sink=(sink_id,
batch_id)`` records the mark in the commit's own database transaction; a batch recorded already
makes that commit abort instead (:class:`~acid_source.errors.BatchAlreadyCommittedError`). So a
micro-batch Spark replays after a crash between the store's commit and its own commit log
commits nothing twice, and one whose commit never happened is committed by the replay: exactly
once. This module keeps the table (created on first use in stores made before it existed) and
answers what a restarted sink asks.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import func, insert, select

from ..errors import InvalidArgumentError, MetastoreError
from .base import StoreBase, integer_or_none
from .schema import sink_batches

_SINK_ID_MAX = 1024
#: The abort reason of a commit refused because its batch was committed already.
SINK_REASON = "micro-batch committed already: "


def sink_key(sink) -> tuple[str, int]:
    """``(sink_id, batch_id)``: a non-empty string of at most 1024 characters and an integer
    batch id >= 0 (Spark's micro-batches count from 0)."""
    if not isinstance(sink, (tuple, list)) or len(sink) != 2:
        raise InvalidArgumentError("sink", f"expected a tuple (sink_id, batch_id), got {sink!r}")
    sink_id, batch_id = sink
    return sink_id_arg(sink_id), batch_id_arg(batch_id)


def sink_id_arg(sink_id) -> str:
    if not isinstance(sink_id, str) or not sink_id or len(sink_id) > _SINK_ID_MAX:
        raise InvalidArgumentError("sink_id", f"expected a non-empty string of at most {_SINK_ID_MAX} characters, "
                                   f"got {sink_id!r}")
    return sink_id


def batch_id_arg(batch_id) -> int:
    value = integer_or_none(batch_id)
    if value is None or value < 0:
        raise InvalidArgumentError("batch_id", f"expected an integer >= 0, got {batch_id!r}")
    return value


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
        return self._run_on(self._sinks_engine(), fn, write=write, what=what)

    def _sinks_engine(self) -> sa.Engine:
        """The engine, with the marks' table made sure of (once per engine)."""
        engine = self._get_engine()
        if getattr(self, "_sinks_ready", None) is not engine:
            self._create_sink_table(engine)
            self._sinks_ready = engine
        return engine

    def _create_sink_table(self, engine) -> None:
        def present(conn) -> bool:
            return sa.inspect(conn).has_table(sink_batches.name)

        if self._run_on(engine, present, write=False, what="look for the sink batch table"):
            return
        try:
            self._run_on(engine, lambda conn: sink_batches.create(conn, checkfirst=True), write=True,
                         what="create the sink batch table")
        except MetastoreError:
            # another process created it between our look and our CREATE (server databases)
            if not self._run_on(engine, present, write=False, what="look for the sink batch table"):
                raise


__all__ = ["SINK_REASON", "SinksMixin", "sink_key"]
