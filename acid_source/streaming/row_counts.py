"""How many rows write ids inserted, from the files alone: what ``maxRowsPerTrigger`` sizes a
micro-batch by. A delta of one write id counts by its footers; a directory of several (a
streaming batch, a minor compaction) by its ``currentTransaction`` column, cut at the
committed length of a file still being streamed."""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ..layout.names import FLUSH_LENGTH_SUFFIX, is_flush_length_file, is_hidden, parse_dir_name
from ..layout.table_dirs import discover_layout
from ..orc.files import OrcFile, read_flush_length
from ..resolve import registered_table
from ..storage import Storage


def inserted_rows(location: str, write_ids: Iterable[int], *, metastore_url: str | None = None,
                  storage_options: tuple = ()) -> dict[int, int]:
    """Insert events per write id among ``write_ids`` (0 for one that left none)."""
    wanted = sorted(set(write_ids))
    counts = dict.fromkeys(wanted, 0)
    if not wanted:
        return counts
    _, info = registered_table(location, metastore_url, ", whose commits a streaming read follows")
    storage = Storage(info.location, storage_options)
    layout = discover_layout(storage)
    lo, hi = wanted[0], wanted[-1]
    wanted_array = np.asarray(wanted, dtype=np.int64)
    for part in layout.partitions:
        entries = layout.listings[part.path]
        for entry in entries:
            parsed = parse_dir_name(entry.name) if entry.is_dir else None
            if parsed is None or parsed.kind != "delta" or parsed.max_write_id < lo or parsed.min_write_id > hi:
                continue
            if not any(parsed.min_write_id <= w <= parsed.max_write_id for w in wanted):
                continue
            single = parsed.min_write_id == parsed.max_write_id
            for f in storage.list_dir(entry.path):
                if f.is_dir or is_hidden(f.name) or is_flush_length_file(f.name):
                    continue
                length = None
                if not single and parsed.visibility_txn_id == 0:
                    side = f.path + FLUSH_LENGTH_SUFFIX
                    if storage.exists(side):
                        length = read_flush_length(storage, side)
                        if length == 0:
                            continue
                orc = OrcFile(storage, f.path, length)
                if single:
                    counts[parsed.min_write_id] += orc.num_rows
                    continue
                for stripe in range(orc.num_stripes):
                    column = orc.read_stripe(stripe, ["currentTransaction"]).column(0).to_numpy(zero_copy_only=False)
                    ids, n = np.unique(column, return_counts=True)
                    for w, c in zip(ids[np.isin(ids, wanted_array)].tolist(), n[np.isin(ids, wanted_array)].tolist()):
                        counts[w] += c
    return counts
