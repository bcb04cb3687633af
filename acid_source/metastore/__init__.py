"""The transaction store: which tables exist, which transactions are open, committed or
aborted, and which write ids they own. The single source of truth for what readers may see.

SQLite (a file under ``~/.acidorc``) by default; any SQLAlchemy URL otherwise.
"""

from .engine import ENV_URL, check_shareable, default_url
from .store import CONFLICT_CHECKED, OPERATIONS, TXN_STATES, Metastore
from .tableinfo import TableInfo, normalize_location

__all__ = [
    "CONFLICT_CHECKED",
    "ENV_URL",
    "OPERATIONS",
    "TXN_STATES",
    "Metastore",
    "TableInfo",
    "check_shareable",
    "default_url",
    "normalize_location",
]
