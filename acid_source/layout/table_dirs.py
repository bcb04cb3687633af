"""A table directory on storage: its partition directories (``k=v`` nesting), their listings,
and partition values. Listing only: what the files hold is the scan's business."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

import pyarrow as pa

from ..errors import NotAnAcidTableError, SchemaError, SnapshotFilesRemovedError, TableNotFoundError
from ..storage import FileEntry, Storage
from .acid_state import CLEANING_MARKER, REMOVING_MARKER, AcidState, check_not_removing, get_acid_state  # noqa: F401 - re-exported
from .names import ACID_VERSION_FILE, is_flush_length_file, is_hidden, parse_dir_name
from .partitions import parse_partition_segment

#: from this many directories to list on object storage, one recursive listing of the table
#: is cheaper than a request per directory
TREE_LISTING_FROM = 64

FULL_ACID = "full"
INSERT_ONLY = "insert_only"


@dataclass(frozen=True)
class PartitionDir:
    path: str
    raw_values: tuple[str | None, ...]  # unescaped strings; None is Hive's default partition


@dataclass
class TableLayout:
    storage: Storage
    partition_columns: list[str]
    partitions: list[PartitionDir]
    # listings of each partition directory, taken once during discovery
    listings: dict[str, list[FileEntry]]
    # on object storage: the discovery took one recursive listing of the table
    tree: dict[str, list[FileEntry]] | None = None

    def list_dirs(self, paths: list[str]) -> dict[str, list[FileEntry] | OSError]:
        """Fresh listings of directories of the table (a reader lists the directories its
        snapshot needs after it took its lease: see acid_state.check_not_removing). Many of
        them on object storage: one recursive listing of the table, a request per thousand
        objects rather than one per directory."""
        if self.tree is None or len(paths) <= TREE_LISTING_FROM:
            return self.storage.list_dirs(paths)
        fresh = self.storage.list_tree(self.root)
        assert fresh is not None  # object storage
        return {p: fresh[p] if p in fresh else FileNotFoundError(p) for p in paths}

    @property
    def root(self) -> str:
        return self.storage.root


def discover_layout(storage: Storage) -> TableLayout:
    """List partition directories (``k=v`` nesting) below the table root."""
    root = storage.root
    # Object stores have no empty directories: a table created empty exists by its marker
    # object (storage.TABLE_MARKER), which makes the root exist and list as a directory.
    with storage.failures("looking for the table"):
        found, is_dir = storage.exists(root), False
        if found:
            is_dir = storage.is_dir(root)
    if not found:
        raise TableNotFoundError(storage.display())
    if not is_dir:
        raise NotAnAcidTableError(storage.display(), "it is a file, not a table directory")

    columns: list[str] | None = None
    partitions: list[PartitionDir] = []
    listings: dict[str, list[FileEntry]] = {}

    def visit(path: str, values: tuple, names: tuple, entries: list[FileEntry]) -> list[tuple]:
        """Record ``path`` as a partition directory, or return its ``k=v`` subdirectories."""
        nonlocal columns
        segments = []
        for e in entries:
            if e.is_dir and not is_hidden(e.name):  # (list_dir refused links leading outside the root)
                seg = parse_partition_segment(e.name)
                if seg is not None and parse_dir_name(e.name) is None:
                    segments.append((e.path, values + (seg[1],), names + (seg[0],)))
        if segments:
            return segments
        if names:
            if columns is None:
                columns = list(names)
            elif [c.lower() for c in columns] != [n.lower() for n in names]:
                raise NotAnAcidTableError(
                    storage.display(), f"inconsistent partition directories: {storage.display(path)} does not "
                                       f"follow {'/'.join(columns)}")
        listings[path] = entries
        partitions.append(PartitionDir(path, values))
        return []

    tree = storage.list_tree(root)  # object storage: the whole table in one recursive listing
    root_entries = tree.get(root.rstrip("/"), []) if tree is not None else None
    if root_entries is not None and not root_entries:
        # what an object store server may keep of a deleted prefix (a folder object): a table
        # has at least its marker, so nothing is there
        raise TableNotFoundError(storage.display())
    level = visit(root, (), (), root_entries if root_entries is not None else storage.list_dir(root))
    while level:  # one partition level at a time, its directories listed at once
        listed = storage.list_dirs([path for path, _, _ in level]) if tree is None else tree
        deeper = []
        for path, values, names in level:
            entries = listed.get(path, [])
            if isinstance(entries, OSError):
                raise entries
            deeper.extend(visit(path, values, names, entries))
        level = deeper
    partitions.sort(key=lambda p: p.path.split("/"))  # the order of a depth-first walk of sorted listings
    return TableLayout(storage, columns or [], partitions, listings, tree)


def has_acid_layout(layout: TableLayout) -> bool:
    for entries in layout.listings.values():
        for e in entries:
            if (e.is_dir and parse_dir_name(e.name) is not None) or e.name == ACID_VERSION_FILE:
                return True
    return False


def data_files(storage: Storage, directory: str) -> list[FileEntry]:
    """Data files directly inside an ACID directory (no hidden files, no side files). A
    directory the cleaner is deleting is a SnapshotFilesRemovedError."""
    try:
        entries = storage.list_dir(directory)
    except FileNotFoundError:
        raise SnapshotFilesRemovedError(storage.display(directory)) from None
    check_not_removing(storage, directory, entries)
    return [e for e in entries if not e.is_dir and not is_hidden(e.name) and not is_flush_length_file(e.name)]


def infer_partition_type(values: list[str | None]) -> pa.DataType:
    """Like Spark's partition type inference: int, bigint, double, date, else string."""
    present = [v for v in values if v is not None]
    if not present:
        return pa.string()

    def all_parse(fn) -> bool:
        try:
            for v in present:
                fn(v)
            return True
        except (ValueError, OverflowError):
            return False

    def as_int(v: str) -> int:
        if v.strip() != v or (v.lstrip("-+")[:1] == "0" and len(v.lstrip("-+")) > 1):
            raise ValueError(v)  # leading zeros would not round-trip
        return int(v)

    if all_parse(as_int):
        ints = [int(v) for v in present]
        if all(-(2**31) <= i < 2**31 for i in ints):
            return pa.int32()
        if all(-(2**63) <= i < 2**63 for i in ints):
            return pa.int64()
    if all_parse(_as_iso_date):
        return pa.date32()
    if all_parse(float) and all(math.isfinite(float(v)) for v in present):
        return pa.float64()  # NaN and the infinities (in any spelling) read as text, every one alike
    return pa.string()


def _as_iso_date(v: str) -> dt.date:
    if len(v) != 10:  # only the canonical yyyy-mm-dd form, as Spark infers it
        raise ValueError(v)
    return dt.date.fromisoformat(v)


def convert_partition_value(raw: str | None, type_: pa.DataType):
    """A partition directory value as a Python value of the column's type (None stays None)."""
    if raw is None:
        return None
    try:
        if pa.types.is_integer(type_):
            return int(raw)
        if pa.types.is_floating(type_):
            return float(raw)
        if pa.types.is_date(type_):
            return dt.date.fromisoformat(raw)
        if pa.types.is_boolean(type_):
            return raw.lower() == "true"
        if pa.types.is_decimal(type_):
            import decimal

            try:
                return decimal.Decimal(raw)
            except decimal.InvalidOperation:
                raise ValueError("not a decimal number") from None
        if pa.types.is_timestamp(type_):
            return dt.datetime.fromisoformat(raw)
    except ValueError as exc:
        raise SchemaError(f"partition value {raw!r} is not a valid {type_}: {exc}") from None
    return raw


def acid_state_for(layout: TableLayout, part: PartitionDir, write_ids, txns) -> AcidState:
    return get_acid_state(layout.storage, part.path, write_ids, txns, layout.listings[part.path])
