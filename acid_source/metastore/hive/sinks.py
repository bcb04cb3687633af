"""Streaming sinks' micro-batch marks, which the Hive Metastore cannot keep: every verb refuses
with :class:`~acid_source.errors.UnsupportedOperationError`."""

from __future__ import annotations

from ...errors import UnsupportedOperationError
from .base import HiveBase


class SinksMixin(HiveBase):
    """The sink verbs, refused: a mark must commit with the transaction, and the HMS cannot do that."""

    def _no_sink_marks(self) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            "exactly-once streaming sink", f"the Hive Metastore at {self.url} cannot record a micro-batch in the "
            "commit's own database transaction: the Hive 3.1 thrift API acidorc speaks commits a transaction and "
            "nothing else (Hive 4's CommitTxnRequest.keyValue could, later), and a mark written in a second call "
            "could be lost between the two, committing a replayed batch twice; use acidorc's own store "
            "(metastoreUrl) for the sink's table")

    def sink_batch(self, sink_id: str, batch_id: int) -> int | None:
        """Refused: the HMS records no micro-batch marks."""
        raise self._no_sink_marks()

    def last_sink_batch(self, sink_id: str) -> int | None:
        """Refused: the HMS records no micro-batch marks."""
        raise self._no_sink_marks()

