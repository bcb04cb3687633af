"""ROW__ID order, neighbour checks and key sets (acid_source/layout/row_ids.py) against
literal expected answers."""

from __future__ import annotations

import numpy as np
import pytest

from acid_source.layout import row_ids
from acid_source.layout.row_ids import KeySet


def arrays(keys):
    o, b, r = zip(*keys) if keys else ((), (), ())
    return np.array(o, np.int64), np.array(b, np.int32), np.array(r, np.int64)


def test_order_sorts_by_write_id_then_bucket_then_row_id():
    keys = [(2, 536870912, 0), (1, 536936448, 5), (1, 536870912, 7), (1, 536870912, 3), (0, 536936448, 0)]
    assert row_ids.order(*arrays(keys)).tolist() == [4, 3, 2, 1, 0]


def test_order_breaks_ties_with_then_in_turn_and_is_stable():
    # the same ROW__ID three times: currentTransaction descending (negated), then delete first
    keys = [(1, 0, 0), (1, 0, 0), (1, 0, 0), (0, 0, 9)]
    current = np.array([5, 7, 7, 1])
    is_delete = np.array([0, 0, 1, 0])
    assert row_ids.order(*arrays(keys), then=(-current, -is_delete)).tolist() == [3, 2, 1, 0]
    assert row_ids.order(*arrays(keys)).tolist() == [3, 0, 1, 2]  # equal keys keep their order


def test_neighbours_and_first_of_each():
    o, b, r = arrays([(1, 0, 0), (1, 0, 0), (1, 0, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1)])
    assert row_ids.same_as_previous(o, b, r).tolist() == [True, False, False, True, True]
    assert row_ids.first_of_each(o, b, r).tolist() == [True, False, True, True, False, False]
    assert row_ids.first_of_each(*arrays([])).tolist() == []
    assert row_ids.first_duplicate(o, b, r) == (1, 0, 0)
    assert row_ids.first_duplicate(*arrays([(1, 0, 0), (1, 0, 1)])) is None


@pytest.mark.parametrize("keys, strict, last, expected", [
    ([(1, 0, 0), (1, 0, 1), (1, 1, 0), (2, 0, 0)], True, None, None),
    ([(1, 0, 1), (1, 0, 0)], True, None, ((1, 0, 1), (1, 0, 0))),
    ([(1, 0, 0), (1, 0, 0)], True, None, ((1, 0, 0), (1, 0, 0))),
    ([(1, 0, 0), (1, 0, 0)], False, None, None),
    ([(1, 1, 0), (1, 0, 5)], False, None, ((1, 1, 0), (1, 0, 5))),
    ([(3, 0, 0)], True, (2, 9, 9), None),
    ([(2, 9, 9)], True, (2, 9, 9), ((2, 9, 9), (2, 9, 9))),
    ([(2, 9, 9)], False, (2, 9, 9), None),
    ([(1, 0, 0)], True, (2, 0, 0), ((2, 0, 0), (1, 0, 0))),
    ([], True, (2, 0, 0), None),
    # bucket properties are int32; a negative one still compares as a number
    ([(1, -5, 0), (1, 3, 0)], True, None, None),
])
def test_descent_finds_the_first_pair_out_of_order(keys, strict, last, expected):
    assert row_ids.descent(*arrays(keys), strict=strict, last=last) == expected


def test_runs_of_equal_write_id_and_bucket():
    o, b, _ = arrays([(1, 0, 0), (1, 0, 1), (1, 1, 0), (2, 1, 0), (2, 1, 3)])
    assert row_ids.runs(o, b).tolist() == [0, 2, 3, 5]
    assert row_ids.runs(*arrays([])[:2]).tolist() == [0]


def test_key_set_membership_deduplicates_and_takes_any_probe_order():
    members = [(1, 0, 5), (1, 0, 3), (1, 0, 3), (2, 0, 0), (1, 1, 4)]
    keys = KeySet(*arrays(members))
    assert len(keys) == 4
    probes = [(1, 0, 3), (1, 0, 4), (1, 0, 5), (1, 1, 4), (2, 0, 0), (2, 0, 1), (3, 0, 0)]
    assert keys.contains(*arrays(probes)).tolist() == [True, False, True, True, True, False, False]
    # more (o, b) runs than the direct path takes: the probe is sorted first, answers stay in place
    many = [(w % 7, 0, w) for w in range(200)] + [(1, 0, 3)]
    hit = keys.contains(*arrays(many))
    assert np.flatnonzero(hit).tolist() == [200] and hit.sum() == 1
    assert KeySet.empty().contains(*arrays(probes)).tolist() == [False] * 7
    assert len(KeySet.concat([arrays(members[:2]), arrays(members[2:])])) == 4
