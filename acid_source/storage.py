"""Storage access through fsspec, with fast native pyarrow files for local paths.

A :class:`Storage` is identified by the table URL (plus fsspec storage options) so it can be
pickled into input partitions and re-created on executors without any live client.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property

import fsspec
import pyarrow as pa
from fsspec.implementations.local import LocalFileSystem

from .errors import AcidError, CorruptFileError, InvalidArgumentError, StorageError, UnsafePathError
from .faults import pause_point

#: The object at a table's root that says "a table lives here". Object stores have no empty
#: directories, so a table created empty would not exist on storage at all; this small object
#: (a hidden name: Hive, Trino and Spark skip names starting with ``_``) makes its root exist.
TABLE_MARKER = "_acidorc_table"
TABLE_MARKER_FORMAT = 1
#: directories listed at once by :meth:`Storage.list_dirs`
LIST_THREADS = 16


@dataclass(frozen=True)
class FileEntry:
    path: str  # filesystem-native path (no protocol)
    name: str
    size: int
    is_dir: bool


def uncached(options: dict) -> dict:
    """fsspec options with its listings cache off. Remote file systems (s3fs, gcsfs, adlfs)
    keep each directory listing until the process itself writes there, and fsspec hands every
    process one shared instance per URL and options: a long-lived process (Spark's driver and
    its reused Python workers, any ``AcidTable`` user) would go on seeing a table as it was,
    without the directories other processes committed since, and a compaction built on such a
    listing would drop their rows for good. Table storage therefore never caches a listing.
    The instance itself is still shared within a process (the option is part of fsspec's
    instance key, so no other code's caching instance is ever used): creating an s3fs instance
    loads botocore's service model, about 0.6 s each time."""
    return {**options, "use_listings_cache": False}


def option_pairs(options: Mapping | Iterable | None, argument: str = "storageOptions") -> tuple:
    """fsspec storage options (a dict, or ``(key, value)`` pairs) as the sorted pairs a
    :class:`Storage` keeps. Values stay as given (a nested dict such as ``client_kwargs`` too)."""
    if options is None:
        return ()
    try:
        pairs = list(options.items()) if isinstance(options, Mapping) else [tuple(p) for p in options]
    except (TypeError, ValueError):
        raise InvalidArgumentError(argument, f"expected a dict of fsspec storage options, got {options!r}") from None
    for pair in pairs:
        if len(pair) != 2 or not isinstance(pair[0], str) or not pair[0]:
            raise InvalidArgumentError(argument, f"expected a dict of fsspec storage options with string keys, "
                                                 f"got the entry {pair!r}")
    return tuple(sorted(pairs, key=lambda p: p[0]))


@dataclass(frozen=True)
class Storage:
    """The file system behind one table root."""

    url: str
    options: tuple = field(default=())  # fsspec storage options as sorted (key, value) pairs

    @cached_property
    def _fs_and_root(self):
        try:
            fs, root = fsspec.core.url_to_fs(self.url, **uncached(dict(self.options)))
        except ImportError as exc:  # fsspec's "Install s3fs to access S3"
            raise StorageError(self.url, f"no file system for this URL: {exc} (for s3:// install acidorc[s3])"
                               ) from exc
        except (ValueError, TypeError) as exc:  # an unknown protocol, a storage option the file system refuses
            raise StorageError(self.url, f"cannot open its file system: {type(exc).__name__}: {exc}") from exc
        return fs, root.rstrip("/") or "/"

    def __getstate__(self):  # never pickle the live filesystem
        return {"url": self.url, "options": self.options}

    def __setstate__(self, state):
        object.__setattr__(self, "url", state["url"])
        object.__setattr__(self, "options", state["options"])

    @cached_property
    def _real_root(self) -> str:
        return os.path.realpath(self.root)

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        return self._fs_and_root[0]

    @property
    def root(self) -> str:
        return self._fs_and_root[1]

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    @property
    def scheme(self) -> str | None:
        """The URL scheme of the table (``s3``), None for a local path."""
        if "://" not in self.url:
            return None
        scheme = self.url.split("://", 1)[0].lower()
        return None if scheme in ("file", "local") else scheme

    def display(self, path: str | None = None) -> str:
        """``path`` (a file-system-native path, as listings give: ``bucket/warehouse/t/...``)
        as a URL for messages (``s3://bucket/warehouse/t/...``); the table root without one.
        Local paths stay paths. Every error about a path in storage names it this way."""
        if path is None:
            return self.url
        scheme = self.scheme
        if scheme is None or "://" in path:
            return path
        return f"{scheme}://{path.lstrip('/')}"

    @contextmanager
    def failures(self, doing: str, path: str | None = None) -> Iterator[None]:
        """Turn any failure of the file system (a botocore ``NoCredentialsError``, an access
        denied, a vanished bucket) into a :class:`StorageError` naming the URL and ``doing``."""
        try:
            yield
        except AcidError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the fsspec implementation raises
            raise StorageError(self.display(path), f"{doing} failed: {type(exc).__name__}: {exc}") from exc

    @property
    def marker_path(self) -> str:
        return self.join(self.root, TABLE_MARKER)

    def write_marker(self) -> bool:
        """Make the table root exist; True if this call created something there. A local
        root is a directory (created if missing). Elsewhere the table marker is written (unless
        one is there): object stores have no directories, and never a bucket is created (a
        missing bucket is an error). Any failure is a StorageError naming the URL."""
        with self.failures("writing the table marker " + TABLE_MARKER, self.marker_path):
            if self.is_local:
                existed = self.fs.exists(self.root)
                self.make_dirs(self.root)
                return not existed
            if self.fs.exists(self.marker_path):
                return False
            pause_point("create.marker_absent")  # tests let another creator write it here
            body = {"format": "acidorc table", "formatVersion": TABLE_MARKER_FORMAT, "location": self.display()}
            with self.fs.open(self.marker_path, "wb") as f:
                f.write(json.dumps(body, sort_keys=True).encode())
            return True

    def objects_under(self, path: str) -> list[str]:
        """Every file below ``path`` (recursively), without the folder object (``path/``) some
        object store servers keep for a prefix."""
        itself = path.rstrip("/")
        try:
            found = self.fs.find(itself, withdirs=False)
        except FileNotFoundError:
            return []
        return [p.rstrip("/") for p in found if p.rstrip("/") != itself]

    def remove_folders(self, path: str) -> None:
        """Remove what stands for the directory ``path`` and those below it once their files
        are gone: on an object store, the folder objects some servers (SeaweedFS, MinIO) keep
        for emptied prefixes, deepest first; on a local disk, the empty directories."""
        fs, itself = self.fs, path.rstrip("/")
        folders, todo = [], [itself]
        while todo:
            folder = todo.pop()
            folders.append(folder)
            try:
                todo += [e["name"].rstrip("/") for e in fs.ls(folder, detail=True)
                         if e.get("type") == "directory" and e["name"].rstrip("/") != folder]
            except FileNotFoundError:
                continue
        for folder in sorted(folders, key=len, reverse=True):
            if fs.exists(folder):
                fs.rm(folder, recursive=True)

    def join(self, directory: str, name: str) -> str:
        return f"{directory.rstrip('/')}/{name}"

    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def is_dir(self, path: str) -> bool:
        return self.fs.isdir(path)

    def list_dir(self, path: str) -> list[FileEntry]:
        entries = []
        itself = path.rstrip("/")
        for info in self.fs.ls(path, detail=True):
            full = info["name"].rstrip("/")
            if full == itself:
                continue  # an object store's folder object ("dir/") standing for the directory itself
            name = full.rsplit("/", 1)[-1]
            is_dir = info.get("type") == "directory"
            if info.get("islink") and self.is_local:
                # fsspec reports a link as "other": refuse one that leaves the table, follow
                # one that stays inside
                self.check_inside_root(full)
                is_dir = os.path.isdir(full)
            entries.append(FileEntry(full, name, int(info.get("size") or 0), is_dir))
        entries.sort(key=lambda e: e.path)
        return entries

    def list_dirs(self, paths: Sequence[str]) -> dict[str, list[FileEntry] | OSError]:
        """:meth:`list_dir` of many directories at once, in threads on object storage, where each
        listing is a round trip and a table of many partitions lists thousands (a local listing
        is a system call: threads would only contend for the interpreter). A directory that
        cannot be listed maps to its error, for the caller to raise in its own terms."""

        def one(path: str) -> list[FileEntry] | OSError:
            try:
                return self.list_dir(path)
            except OSError as exc:
                return exc

        unique = list(dict.fromkeys(paths))
        if len(unique) <= 1 or self.is_local:
            return {p: one(p) for p in unique}
        with ThreadPoolExecutor(max_workers=min(LIST_THREADS, len(unique))) as pool:
            return dict(zip(unique, pool.map(one, unique)))

    def list_tree(self, path: str) -> dict[str, list[FileEntry]] | None:
        """Every directory below ``path`` (itself included) with its entries, as :meth:`list_dir`
        gives them, from one recursive listing: on object storage that is a request per
        thousand objects instead of one per directory. None for a local file system, whose
        directories are cheap to list one by one."""
        if self.is_local:
            return None
        top = path.rstrip("/")
        found: dict[str, dict[str, FileEntry]] = {top: {}}
        for name, info in self.fs.find(top, withdirs=True, detail=True).items():
            full = name.rstrip("/")
            if full == top or not full.startswith(top + "/"):
                continue  # the directory itself (or its folder object)
            parent, base = full.rsplit("/", 1)
            is_dir = info.get("type") == "directory" or name.endswith("/")
            seen = found.setdefault(parent, {}).get(full)
            if seen is None or (is_dir and not seen.is_dir):  # a folder object beside the directory it implies
                found[parent][full] = FileEntry(full, base, 0 if is_dir else int(info.get("size") or 0), is_dir)
            if is_dir:
                found.setdefault(full, {})
        return {d: sorted(entries.values(), key=lambda e: e.path) for d, entries in found.items()}

    def check_inside_root(self, path: str) -> None:
        """Refuse a local path that a symbolic link leads outside the table root: acidorc
        never reads or writes outside the table (object stores have no links)."""
        if not self.is_local:
            return
        real_root = self._real_root
        real = os.path.realpath(path)
        if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
            raise UnsafePathError(path, f"leads outside the table root {self.root} (to {real}) "
                                  "through a symbolic link; acidorc reads and writes only inside the table")

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open(path, "rb") as f:
            return f.read()

    def make_dirs(self, path: str) -> None:
        self.fs.makedirs(path, exist_ok=True)

    def write_if_absent(self, path: str, data: bytes) -> None:
        self.check_inside_root(path)  # a dangling link would create its target elsewhere
        if not self.fs.exists(path):
            with self.fs.open(path, "wb") as f:
                f.write(data)

    def put_file(self, local_path: str, path: str) -> None:
        """Move a finished local file to ``path`` (a rename where possible). Partial copies are
        harmless: files of a write id are invisible until the metastore commits it."""
        if self.is_local:
            self.check_inside_root(path)
            shutil.move(local_path, path)
        else:
            self.fs.put_file(local_path, path)

    def remove(self, path: str, recursive: bool = False) -> None:
        if self.fs.exists(path):
            self.fs.rm(path, recursive=recursive)

    def open_input(self, path: str, length: int | None = None):
        """A pyarrow random-access file; ``length`` limits it to a prefix (``_flush_length``)."""
        if self.is_local:
            mapped = pa.memory_map(path)
            if length is not None and length > mapped.size():
                raise CorruptFileError(path, f"its _flush_length says {length} bytes were committed, but the "
                                             f"file holds only {mapped.size()}")
            if length is None or length == mapped.size():
                return mapped
            return pa.BufferReader(mapped.read_buffer(length))
        raw = self.fs.open(path, "rb")
        if length is not None:
            raw = _PrefixFile(raw, length)
        return pa.PythonFile(raw, mode="r")


class _PrefixFile(io.RawIOBase):
    """A read-only view of the first ``length`` bytes of another file object."""

    def __init__(self, inner, length: int):
        self._inner = inner
        self._length = length
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._length}[whence]
        self._pos = max(0, min(self._length, base + offset))
        return self._pos

    def read(self, size: int = -1) -> bytes:
        remaining = self._length - self._pos
        if size is None or size < 0 or size > remaining:
            size = remaining
        self._inner.seek(self._pos)
        data = self._inner.read(size)
        self._pos += len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._inner.close()
        super().close()
