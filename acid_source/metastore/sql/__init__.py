"""acidorc's own transaction store in a SQL database (SQLAlchemy Core; SQLite by default,
PostgreSQL and others by URL): :class:`Metastore`, composed in ``store`` of one mixin per job
(``catalog``, ``transactions``, ``snapshots``, ``leases``, ``sinks``) over ``base`` (engines,
retries, the schema check); ``schema`` holds its tables and ``engine`` what is dialect-specific."""

from .store import Metastore

__all__ = ["Metastore"]
