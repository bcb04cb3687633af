"""UPDATE, DELETE and MERGE as Hive's split-update: the change events and their files (``events``,
executor), the engine-free producer (``arrow_changes``), assignments, the row-level conflict
rule, and ``execution``: one transaction, one snapshot, one commit (driver). The Spark producers
are :mod:`acid_source.spark.dml`; SQL statements are parsed in :mod:`acid_source.expressions`."""
