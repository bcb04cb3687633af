"""How a directory's files become the slices a task reads. The scan, the compactor and the change
feed all read a table's files, and must cut them alike: one function for the files of an ACID
directory, one for pre-ACID files, so a rule about names, empty files or streamed deltas is
written once.

- A bucket id comes from the file's name (``bucket_N``, or Hive's ``000000_0`` for pre-ACID and
  raw loaded files); a full-ACID table's file without one is a :class:`CorruptFileError`.
- A file of a streamed delta (several write ids, no visibility suffix) is read up to the length
  its ``_flush_length`` side file holds (nothing yet: skipped); an empty file is skipped.
- Files of one bucket in one directory know the bucket's files before them
  (``earlier_originals``): a raw file's synthetic row ids count on from theirs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ..errors import CorruptFileError, SnapshotFilesRemovedError
from ..layout.acid_state import AcidDir
from ..layout.names import FLUSH_LENGTH_SUFFIX, is_flush_length_file, is_hidden, parse_bucket_file
from ..layout.table_dirs import FULL_ACID, check_not_removing
from ..orc.files import read_flush_length
from ..storage import FileEntry, Storage
from .splits import FileSlice


def dir_slices(storage: Storage, acid_dir: AcidDir, entries: list[FileEntry] | OSError | None = None, *,
               table_kind: str = FULL_ACID) -> list[FileSlice]:
    """The data files of one base or delta directory as slices. ``entries``: its listing when
    taken already (a listing error too, raised here in the read's terms); else it is listed now.
    A directory gone since the table was listed is a :class:`SnapshotFilesRemovedError` (the
    cleaner removed it), one being removed file by file likewise."""
    p = acid_dir.parsed
    if entries is None:
        entries = storage.list_dirs([acid_dir.path])[acid_dir.path]
    if isinstance(entries, FileNotFoundError):  # listed with the table, removed by the cleaner since
        raise SnapshotFilesRemovedError(storage.display(acid_dir.path)) from None
    if isinstance(entries, OSError):
        raise entries
    check_not_removing(storage, acid_dir.path, entries)  # being deleted file by file (object stores)
    names = {e.name for e in entries}
    streaming = p.kind == "delta" and p.min_write_id != p.max_write_id and p.visibility_txn_id == 0
    slices = []
    earlier: dict[int, list[str]] = defaultdict(list)
    for entry in entries:
        if entry.is_dir or is_hidden(entry.name) or is_flush_length_file(entry.name):
            continue
        bucket = _bucket_of(storage, entry, table_kind, "data file name carries no bucket id (expected bucket_N)")
        length = None
        if streaming and entry.name + FLUSH_LENGTH_SUFFIX in names:
            length = read_flush_length(storage, entry.path + FLUSH_LENGTH_SUFFIX)
            if length <= 0:
                continue  # nothing committed yet
        elif entry.size == 0:
            continue
        slices.append(FileSlice(entry.path, bucket, p.kind, p.min_write_id, p.max_write_id, p.statement_id,
                                length=length, earlier_originals=tuple(earlier[bucket]),
                                size=length if length is not None else entry.size))
        earlier[bucket].append(entry.path)
    return slices


def original_slices(storage: Storage, originals: Iterable[FileEntry], *,
                    table_kind: str = FULL_ACID) -> list[FileSlice]:
    """Pre-ACID files (those a snapshot reads: non-empty, in path order) as slices, each with
    the earlier files of its bucket (its synthetic row ids count on from theirs)."""
    slices = []
    earlier: dict[int, list[str]] = defaultdict(list)
    for entry in originals:
        bucket = _bucket_of(storage, entry, table_kind,
                            "a pre-ACID file of a full-ACID table must be named like 000000_0 (its bucket id)")
        slices.append(FileSlice(entry.path, bucket, "original", 0, 0, -1,
                                earlier_originals=tuple(earlier[bucket]), size=entry.size))
        earlier[bucket].append(entry.path)
    return slices


def _bucket_of(storage: Storage, entry: FileEntry, table_kind: str, problem: str) -> int:
    bucket = parse_bucket_file(entry.name).bucket_id
    if bucket < 0 and table_kind == FULL_ACID:
        raise CorruptFileError(storage.display(entry.path), problem)
    return bucket
