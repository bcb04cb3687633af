"""The transaction store's relational schema (SQLAlchemy Core, portable across databases).

Every id comes from a counter row in ``acidorc_sequences`` (``txn_id``, ``table_id``,
``commit_seq``) or, for write ids, from ``acidorc_tables.write_id_hwm``: an ``UPDATE ... SET
value = value + 1`` is the first statement of the allocating transaction, so on a server
database it takes a row lock that serializes allocators, and on SQLite the whole transaction
already holds the database's write lock (``BEGIN IMMEDIATE``). Ids are never reused, even after
rows are deleted.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

#: Bumped whenever the tables below change; ``acidorc_meta.schema_version`` records what a
#: database holds so a later release can migrate it.
SCHEMA_VERSION = 1

SEQUENCES = ("txn_id", "table_id", "commit_seq")

metadata = MetaData()

meta = Table(
    "acidorc_meta",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", String(255), nullable=False),
)

sequences = Table(
    "acidorc_sequences",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

tables = Table(
    "acidorc_tables",
    metadata,
    Column("table_id", BigInteger, primary_key=True, autoincrement=False),
    Column("name", String(512), nullable=True, unique=True),
    Column("location", String(2048), nullable=False, unique=True),
    Column("schema_ipc", LargeBinary, nullable=False),  # pyarrow.Schema.serialize()
    Column("partition_columns", Text, nullable=False),  # JSON list
    Column("bucket_columns", Text, nullable=False),  # JSON list
    Column("num_buckets", Integer, nullable=False),
    Column("insert_only", Boolean, nullable=False),
    Column("compression", String(16), nullable=False),
    Column("bucketing_version", Integer, nullable=False),
    Column("properties", Text, nullable=False),  # JSON object of strings
    Column("created_at", Float, nullable=False),
    Column("write_id_hwm", BigInteger, nullable=False),  # highest write id allocated
)

txns = Table(
    "acidorc_txns",
    metadata,
    Column("txn_id", BigInteger, primary_key=True, autoincrement=False),
    Column("state", String(16), nullable=False),  # open | committed | aborted
    Column("user_name", String(255), nullable=False),
    Column("description", Text, nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("last_heartbeat", Float, nullable=False),
    # the commit sequence value when the txn opened: commits numbered above it are concurrent
    Column("start_seq", BigInteger, nullable=False),
    Column("ended_at", Float, nullable=True),
    Column("commit_seq", BigInteger, nullable=True, unique=True),
    Column("operation", String(32), nullable=True),
    Column("abort_reason", Text, nullable=True),
    Index("ix_acidorc_txns_state", "state"),
)

txn_write_ids = Table(
    "acidorc_txn_write_ids",
    metadata,
    Column("txn_id", BigInteger, ForeignKey("acidorc_txns.txn_id"), primary_key=True),
    Column("table_id", BigInteger, primary_key=True),
    Column("write_id", BigInteger, nullable=False),
    UniqueConstraint("table_id", "write_id", name="uq_acidorc_write_id"),
)

# The data objects (unpartitioned table = "", else a partition path) a committed txn changed.
txn_components = Table(
    "acidorc_txn_components",
    metadata,
    Column("txn_id", BigInteger, ForeignKey("acidorc_txns.txn_id"), primary_key=True),
    Column("table_id", BigInteger, primary_key=True),
    Column("partition_path", String(2048), primary_key=True),
    Index("ix_acidorc_components_object", "table_id", "partition_path"),
)

# Reader leases (``leases.py``): a read holds one for its snapshot while it runs, so the cleaner
# keeps every directory that snapshot reads. Live while ``expires_at`` (last renewal + ttl, store
# clock) is not past. Created by ``metadata.create_all`` in new stores and on first use in
# stores created before leases existed (no schema version change: nothing else depends on it).
read_leases = Table(
    "acidorc_read_leases",
    metadata,
    Column("lease_id", String(32), primary_key=True),  # random hex: no sequence row needed
    Column("table_id", BigInteger, nullable=False),
    Column("write_ids", Text, nullable=False),  # the snapshot's ValidWriteIdList string
    Column("txns", Text, nullable=False),  # the snapshot's ValidTxnList string
    Column("holder", String(512), nullable=False),
    Column("acquired_at", Float, nullable=False),
    Column("renewed_at", Float, nullable=False),
    Column("ttl_seconds", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Index("ix_acidorc_read_leases_table", "table_id", "expires_at"),
)

# Streaming sinks' micro-batches (``sinks.py``): (sink, batch) committed by which transaction,
# inserted in the commit's own database transaction, so a replayed micro-batch never commits
# twice (exactly once). Created by ``metadata.create_all`` in new stores and on first use in
# stores created before sinks existed (no schema version change: nothing else depends on it).
sink_batches = Table(
    "acidorc_sink_batches",
    metadata,
    Column("sink_id", String(1024), primary_key=True),
    Column("batch_id", BigInteger, primary_key=True, autoincrement=False),
    Column("txn_id", BigInteger, nullable=False),
    Column("table_id", BigInteger, nullable=False),
    Column("committed_at", Float, nullable=False),
)
