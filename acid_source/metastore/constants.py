"""The words every transaction store speaks: what a commit did (its operation), which
operations the conflict rules treat alike, and the states of a transaction. Both stores (the
SQL one in :mod:`.sql`, the Hive Metastore in :mod:`.hive`) and the callers that read commit
records (row-level conflict detection, the change feed) take them from here, so a new
operation is added in one place."""

from __future__ import annotations

# --- operations: what a commit did ---------------------------------------------------------------
INSERT = "insert"
INSERT_OVERWRITE = "insert_overwrite"
UPDATE = "update"
DELETE = "delete"
MERGE = "merge"
COMPACTION = "compaction"
#: The operation of the one commit that records an adopted history (``create_table(...,
#: adopted=...)``); never passed to ``commit``.
ADOPT = "adopt"

#: What a commit may say it did; the conflict rules depend on it (DESIGN.md, "Concurrency rules").
OPERATIONS = (INSERT, INSERT_OVERWRITE, UPDATE, DELETE, MERGE, COMPACTION)
#: Operations that fail when a data object they touched changed after they started.
CONFLICT_CHECKED = frozenset({UPDATE, DELETE, MERGE, COMPACTION})
#: The row-changing operations (DML): their delete events are keyed by ROW__ID.
DML_OPERATIONS = frozenset({UPDATE, DELETE, MERGE})
#: Commits that never make a DML fail: a compaction keeps every row's ROW__ID, so delete
#: events planned before it still find their rows after it.
NEVER_FAIL_DML = frozenset({COMPACTION})
#: In row-level mode, the commits that fail a later DML on the same data object outright.
REPLACES_ROWS = frozenset({INSERT_OVERWRITE})
#: The commits after a compaction started that fail it: an overwrite replaced the rows it
#: compacted, and a second compaction of the same data object would show them twice. Inserts,
#: updates, deletes and merges never do: their rows and delete events keep their ROW__IDs,
#: which the compaction's outputs keep too.
INVALIDATES_COMPACTION = frozenset({INSERT_OVERWRITE, COMPACTION})
#: Commits outside the write-id order rule: a compaction's base holds every write id below it
#: already.
NO_WRITE_ID_ORDER = frozenset({COMPACTION})

# --- the states of a transaction -----------------------------------------------------------------
OPEN, COMMITTED, ABORTED = "open", "committed", "aborted"
TXN_STATES = (OPEN, COMMITTED, ABORTED)
