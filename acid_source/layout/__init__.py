"""Hive's on-disk format in pure code: directory and file names, snapshots (ValidWriteIdList /
ValidTxnList), getAcidState's directory selection, partitions, BucketCodec, Hive's types, hash
and bucketing, ROW__ID order. It imports nothing of acidorc above it but errors, storage and
java_numbers (HIVE_ACID_FORMAT.md is the contract)."""
