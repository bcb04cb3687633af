"""Test-only generator of Hive-layout ACID tables, written with pyorc straight from
HIVE_ACID_FORMAT.md: directory names, the ACID event struct, BucketCodec V1 bucket values,
``hive.acid.key.index`` / ``hive.acid.stats`` / ``hive.acid.version`` footers,
``_orc_acid_version`` files, ``_flush_length`` side files and pre-ACID originals.

It is deliberately independent of ``acid_source`` (only the format doc is shared) so that
tests compare two implementations, not one with itself.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field
from pathlib import Path

import pyorc

INSERT, UPDATE, DELETE = 0, 1, 2


def bucket_property(writer_id: int, statement_id: int = 0) -> int:
    return (1 << 29) | (writer_id << 16) | max(0, statement_id)


def base_name(write_id: int, visibility: int = 0) -> str:
    return f"base_{write_id:07d}" + (f"_v{visibility:07d}" if visibility else "")


def delta_name(lo: int, hi: int, stmt: int | None = 0, visibility: int = 0, delete: bool = False) -> str:
    name = ("delete_delta_" if delete else "delta_") + f"{lo:07d}_{hi:07d}"
    if stmt is not None:
        name += f"_{stmt:04d}"
    if visibility:
        name += f"_v{visibility:07d}"
    return name


@dataclass(frozen=True)
class Event:
    operation: int
    original_write_id: int
    bucket: int  # the encoded bucket property
    row_id: int
    current_write_id: int
    row: tuple | None

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.original_write_id, self.bucket, self.row_id)

    def as_tuple(self):
        return (self.operation, self.original_write_id, self.bucket, self.row_id, self.current_write_id, self.row)


@dataclass
class HiveTable:
    """A table directory being built. ``columns`` are (name, ORC type) pairs."""

    root: Path
    columns: list[tuple[str, str]]
    stripe_rows: int | None = None  # rows per stripe (forces multi-stripe files when small)
    acid_version_file: bool = True
    written: list[Path] = field(default_factory=list)
    # Hive's query-based compactor names the event columns in lower case (``operation``,
    # ``originaltransaction``, ..., ``row``) and may write no ``hive.acid.*`` footer metadata
    lowercase_event_columns: bool = False

    def __post_init__(self):
        self.root = Path(self.root)
        self.root.mkdir(parents=True, exist_ok=True)

    @property
    def row_type(self) -> str:
        return "struct<" + ",".join(f"{n}:{t}" for n, t in self.columns) + ">"

    @property
    def event_type(self) -> str:
        if self.lowercase_event_columns:
            return ("struct<operation:int,originaltransaction:bigint,bucket:int,rowid:bigint,"
                    f"currenttransaction:bigint,row:{self.row_type}>")
        return ("struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
                f"currentTransaction:bigint,row:{self.row_type}>")

    def dir(self, name: str, partition: str | None = None) -> Path:
        d = self.root / partition / name if partition else self.root / name
        d.mkdir(parents=True, exist_ok=True)
        if self.acid_version_file and name.startswith(("base_", "delta_", "delete_delta_")):
            (d / "_orc_acid_version").write_bytes(b"2")
        return d

    # --- files -------------------------------------------------------------------------------
    def write_events(self, path: Path, events: list[Event], *, key_index: bool = True, stats: bool = True,
                     acid_version: bool = True, sort: bool = True, flush_at: list[int] | None = None,
                     compression=pyorc.CompressionKind.ZLIB) -> Path:
        """Write ACID events to ``path``; with ``flush_at``, also a ``_flush_length`` side file
        whose lengths are intermediate footers after that many events."""
        events = sorted(events, key=lambda e: (e.key, -e.current_write_id)) if sort else list(events)
        path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        stripe_rows = self.stripe_rows or max(1, len(events))
        last_keys = []
        lengths = []
        # pyorc hands rows to ORC in batches; a stripe can only be closed on a batch boundary
        batch_size = 1 if flush_at else (stripe_rows if self.stripe_rows else 1024)
        writer = pyorc.Writer(buf, self.event_type, stripe_size=1 << 30, compression=compression,
                              batch_size=batch_size, struct_repr=pyorc.StructRepr.TUPLE)
        open_rows = 0  # events written since the last stripe was closed
        for n, e in enumerate(events, start=1):
            writer.write(e.as_tuple())
            open_rows += 1
            if flush_at and n in flush_at:
                lengths.append(writer.write_intermediate_footer())
                last_keys.append(e.key)
                open_rows = 0
            elif not flush_at and n % stripe_rows == 0 and n < len(events):
                writer.write_intermediate_footer()  # closes the stripe
                last_keys.append(e.key)
                open_rows = 0
        if open_rows:
            last_keys.append(events[-1].key)
        meta = {}
        if key_index:
            meta["hive.acid.key.index"] = "".join(f"{w},{b},{r};" for w, b, r in last_keys).encode()
        if stats:
            ins = sum(e.operation == INSERT for e in events)
            upd = sum(e.operation == UPDATE for e in events)
            dels = sum(e.operation == DELETE for e in events)
            meta["hive.acid.stats"] = f"{ins},{upd},{dels}".encode()
        if acid_version:
            meta["hive.acid.version"] = b"2"
        if meta:
            writer.set_user_metadata(**meta)
        writer.close()
        path.write_bytes(buf.getvalue())
        if flush_at is not None:
            side = path.with_name(path.name + "_flush_length")
            side.write_bytes(b"".join(struct.pack(">q", n) for n in ([0] + lengths)))
        self.written.append(path)
        return path

    def write_plain(self, path: Path, rows: list[tuple], row_type: str | None = None) -> Path:
        """A plain (non-ACID) ORC file: pre-ACID originals and insert-only tables."""
        path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        stripe_rows = self.stripe_rows or max(1, len(rows))
        with pyorc.Writer(buf, row_type or self.row_type, stripe_size=1 << 30,
                          batch_size=stripe_rows if self.stripe_rows else 1024,
                          struct_repr=pyorc.StructRepr.TUPLE) as writer:
            for i, row in enumerate(rows):
                writer.write(row)
                if (i + 1) % stripe_rows == 0 and (i + 1) < len(rows):
                    writer.write_intermediate_footer()
        path.write_bytes(buf.getvalue())
        self.written.append(path)
        return path

    # --- Hive operations ---------------------------------------------------------------------
    def insert(self, write_id: int, rows_by_bucket: dict[int, list[tuple]], *, stmt: int = 0,
               partition: str | None = None, dir_name: str | None = None, file_suffix: str = "",
               **file_kw) -> dict[int, list[Event]]:
        """An INSERT by ``write_id``: ``delta_W_W_S/bucket_N`` with fresh row ids per bucket."""
        d = self.dir(dir_name or delta_name(write_id, write_id, stmt), partition)
        out = {}
        for bucket, rows in rows_by_bucket.items():
            prop = bucket_property(bucket, stmt)
            events = [Event(INSERT, write_id, prop, i, write_id, row) for i, row in enumerate(rows)]
            self.write_events(d / f"bucket_{bucket:05d}{file_suffix}", events, **file_kw)
            out[bucket] = events
        return out

    def delete(self, write_id: int, keys: list[tuple[int, int, int]], *, stmt: int = 0,
               partition: str | None = None, dir_name: str | None = None, **file_kw) -> list[Event]:
        """A DELETE by ``write_id`` of rows given by ROW__ID; events go to the file of the
        writer id encoded in each ROW__ID's bucket, as Hive requires."""
        d = self.dir(dir_name or delta_name(write_id, write_id, stmt, delete=True), partition)
        by_file: dict[int, list[Event]] = {}
        for w, b, r in keys:
            writer = (b >> 16) & 0xFFF if (b >> 29) else b
            by_file.setdefault(writer, []).append(Event(DELETE, w, b, r, write_id, None))
        out = []
        for writer, events in by_file.items():
            self.write_events(d / f"bucket_{writer:05d}", events, **file_kw)
            out.extend(events)
        return out

    def base(self, write_id: int, events_by_bucket: dict[int, list[Event]], *, visibility: int = 0,
             partition: str | None = None, **file_kw) -> Path:
        """A base directory (major compaction output or INSERT OVERWRITE) holding these events."""
        d = self.dir(base_name(write_id, visibility), partition)
        for bucket, events in events_by_bucket.items():
            self.write_events(d / f"bucket_{bucket:05d}", events, **file_kw)
        return d

    def raw_dir(self, name: str, events_by_bucket: dict[int, list[Event]], partition: str | None = None,
                **file_kw) -> Path:
        """Any ACID directory (e.g. a minor-compacted ``delta_5_10_v42``) with given events."""
        d = self.dir(name, partition)
        for bucket, events in events_by_bucket.items():
            self.write_events(d / f"bucket_{bucket:05d}", events, **file_kw)
        return d

    def original(self, name: str, rows: list[tuple], partition: str | None = None, subdir: str | None = None) -> Path:
        """A pre-ACID file such as ``000000_0`` or ``000001_0_copy_1`` at the partition root."""
        base = self.root / partition if partition else self.root
        if subdir:
            base = base / subdir
        return self.write_plain(base / name, rows)

