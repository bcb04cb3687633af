"""KeySet membership and the ACID v1 winner choice against literal Python versions."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_source.merge import KeySet, choose_winners

keys = st.tuples(st.integers(0, 3), st.sampled_from([536870912, 536936448, 3]), st.integers(0, 40))


def arrays(ks):
    return (np.array([k[0] for k in ks], dtype=np.int64), np.array([k[1] for k in ks], dtype=np.int32),
            np.array([k[2] for k in ks], dtype=np.int64))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(keys, max_size=60), st.lists(keys, max_size=120), st.booleans())
def test_contains_matches_set_membership(members, probes, contiguous):
    if contiguous and probes:  # a run of consecutive row ids, as in an insert file
        w, b, r = probes[0]
        probes = [(w, b, r + i) for i in range(len(probes))]
    ks = KeySet(*arrays(members))
    expected = [p in set(members) for p in probes]
    assert ks.contains(*arrays(probes)).tolist() == expected
    assert len(ks) == len(set(members))


def test_many_runs_take_the_sorted_path():
    members = [(w, 536870912, r) for w in range(200) for r in (1, 3)]
    probes = [(w, 536870912, r) for w in reversed(range(200)) for r in range(4)]
    hit = KeySet(*arrays(members)).contains(*arrays(probes))
    assert hit.tolist() == [p in set(members) for p in probes]


def test_winner_is_newest_valid_event_deletes_first_on_ties():
    events = pa.table({
        "originalTransaction": [1, 1, 1, 2, 2],
        "bucket": [0, 0, 0, 0, 0],
        "rowId": [0, 0, 0, 0, 0],
        "currentTransaction": [1, 3, 3, 2, 2],
        "operation": [0, 1, 2, 0, 1],
        "statement": [0, 0, 0, 0, 1],
        "sequence": [0, 1, 2, 3, 4],
    })
    winners = choose_winners(events).to_pylist()
    assert [(w["originalTransaction"], w["operation"]) for w in winners] == [(1, 2), (2, 1)]
