"""A Hive Metastore (thrift) as the transaction store: :class:`HiveMetastore`, selected by a
``thrift://host:9083`` store URL. Needs the ``hive`` extra (``pip install acidorc[hive]``).

Its parts mirror the SQL store's (:mod:`..sql`): ``base`` (the connection, typed errors, table
lookups), ``catalog``, ``transactions`` (Hive's locks and write set), ``snapshots``, ``leases``,
``sinks`` (refused), composed in ``store``; ``connection`` (URIs, failover, the transport) and
``convert`` (thrift structs <-> acidorc's values) below them."""

from .store import HiveMetastore

__all__ = ["HiveMetastore"]
