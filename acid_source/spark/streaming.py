"""Structured Streaming: not available yet, and said so plainly.

Spark's Python streaming runner (``python_streaming_source_runner.main``, 4.x) calls
``reader.stop()`` in a ``finally`` even when creating the reader failed, so an error raised by
``DataSource.streamReader`` itself reaches the user buried under an ``UnboundLocalError``.
``streamReader`` therefore returns this reader, which raises the typed error the first time
Spark asks it for anything.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSourceStreamReader

from ..errors import UnsupportedOperationError


def streaming_read_unavailable(path: str | None) -> UnsupportedOperationError:
    where = f"{path}: " if path else ""
    return UnsupportedOperationError(
        "streaming read",
        f"{where}streaming reads of acidorc tables are not available yet; read the table in batches "
        "with spark.read.format('acidorc') (options versionAsOf / validWriteIds pick a snapshot)")


class UnavailableStreamReader(DataSourceStreamReader):
    """A stream reader whose every use raises :class:`UnsupportedOperationError`."""

    def __init__(self, path: str | None):
        self.path = path

    def _refuse(self, *_args, **_kwargs):
        raise streaming_read_unavailable(self.path)

    initialOffset = latestOffset = partitions = read = commit = _refuse

    def stop(self) -> None:
        """Nothing to release (Spark calls this also after a failure)."""
