"""A Hive Metastore (thrift) as the transaction store: :class:`HiveMetastore`, selected by a
``thrift://host:9083`` store URL. Needs the ``hive`` extra (``pip install acidorc[hive]``)."""

from .connection import is_thrift_url
from .store import HiveMetastore

__all__ = ["HiveMetastore", "is_thrift_url"]
