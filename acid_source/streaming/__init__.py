"""Streaming and change data: Hive's streaming ingest from Python (``connection``: transaction
batches writing growing bucket files), a stream's position (``offsets``, ``row_counts``) and the
change feed of committed writes (``change_plan`` on the driver, ``change_reader`` on executors,
``changes``: ``AcidTable.changes``). The Spark source and sink are in :mod:`acid_source.spark`."""
