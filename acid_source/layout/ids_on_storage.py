"""Which write ids and transaction ids a table's storage already uses, by directory names.

The rule every write keeps: it never writes into a directory that already exists. A
transaction store hands out write ids above its high-water mark, so a base, delta or delete
delta directory of a higher write id (or a compaction output ``_vT`` of a transaction id
above the store's) cannot have come from this store's history: the store is behind the
storage (restored from an older copy, or the table was dropped and created again), and the
ids it would hand out next are taken. Names only, from a listing: no file is opened.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..storage import Storage
from .names import is_hidden, parse_dir_name
from .table_dirs import TableLayout, discover_layout


@dataclass(frozen=True)
class UsedDir:
    """One ACID directory of the listing: its path, highest write id and visibility txn id."""

    path: str
    max_write_id: int
    visibility_txn_id: int


@dataclass(frozen=True)
class IdsOnStorage:
    """The ACID directories of a table listing (every partition) and the highest ids they
    name; compared with the store's high-water marks under its lock."""

    location: str
    dirs: tuple[UsedDir, ...] = ()

    @property
    def write_id(self) -> int:
        """The highest write id any directory holds (0: none)."""
        return max((d.max_write_id for d in self.dirs), default=0)

    @property
    def txn_id(self) -> int:
        """The highest visibility transaction id (``_vT``) any directory carries (0: none)."""
        return max((d.visibility_txn_id for d in self.dirs), default=0)

    def above(self, write_id_hwm: int, txn_id_hwm: int) -> list[str]:
        """The directories a store with these high-water marks never handed out."""
        return sorted(d.path for d in self.dirs
                      if d.max_write_id > write_id_hwm or d.visibility_txn_id > txn_id_hwm)

    def behind_message(self, url: str, write_id_hwm: int, txn_id_hwm: int) -> str:
        """Why a write is refused, and how to recover (the StoreBehindStorageError message)."""
        found = self.above(write_id_hwm, txn_id_hwm)
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        return (f"the transaction store {url} is behind the storage of {self.location}: its next write id "
                f"would be {write_id_hwm + 1}, but storage already holds directories of write ids up to "
                f"{self.write_id} (transaction ids up to {self.txn_id}) that it never handed out: {shown}. "
                "Was the store restored from an older copy, or the table dropped without purge and created "
                "again? A write there would reuse those directories and mix its rows with a history the store "
                "has lost, so nothing was written. To recover, register the history on storage: "
                f"acid_source.drop_table({self.location!r}) (the files stay), then acid_source.create_table("
                f"{self.location!r}, schema, ..., adopt=True); or write to a new location")


def ids_on_storage(layout: TableLayout) -> IdsOnStorage:
    """The ACID directories of every partition of ``layout``."""
    storage = layout.storage
    dirs = []
    for entries in layout.listings.values():
        for entry in entries:
            parsed = parse_dir_name(entry.name) if entry.is_dir else None
            if parsed is not None:
                dirs.append(UsedDir(storage.display(entry.path), parsed.max_write_id, parsed.visibility_txn_id))
    return IdsOnStorage(storage.display(), tuple(dirs))


def list_ids_on_storage(storage: Storage) -> IdsOnStorage:
    """The ACID directories of a fresh listing of the table (listings are never cached,
    ``storage.py``); a table root that does not exist yet holds nothing.

    A local table is listed as every read lists it (one listing per partition directory). On
    an object store, where each listing is a request, one recursive listing of the prefix
    finds them instead: a request per 1,000 objects rather than one per partition."""
    with storage.failures("listing the table before allocating a write id"):
        if not storage.exists(storage.root):
            return IdsOnStorage(storage.display())
        if not storage.is_local:
            return _ids_of_objects(storage, storage.objects_under(storage.root))
    return ids_on_storage(discover_layout(storage))


def _ids_of_objects(storage: Storage, objects: list[str]) -> IdsOnStorage:
    """The ACID directories named in the paths of ``objects`` (an object store has no empty
    directories: a directory is there when an object under it is), outside hidden ones."""
    root = storage.root.rstrip("/")
    found: dict[str, UsedDir] = {}
    for key in objects:
        segments = key[len(root):].strip("/").split("/")[:-1]  # the directories above the object
        for i, segment in enumerate(segments):
            if is_hidden(segment):
                break
            parsed = parse_dir_name(segment)
            if parsed is not None:
                path = "/".join([root, *segments[:i + 1]])
                found[path] = UsedDir(storage.display(path), parsed.max_write_id, parsed.visibility_txn_id)
                break
    return IdsOnStorage(storage.display(), tuple(found[p] for p in sorted(found)))
