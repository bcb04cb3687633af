import numpy as np
import pytest

from acid_source.layout import bucket_codec


@pytest.mark.parametrize("writer, stmt, value", [(0, 0, 536870912), (1, 0, 536936448), (3, 2, 537067522)])
def test_v1_values_from_the_format_table(writer, stmt, value):
    assert bucket_codec.encode_v1(writer, stmt) == value
    assert bucket_codec.decode_writer_id(value) == writer
    assert bucket_codec.decode_statement_id(value) == stmt


def test_v0_is_the_plain_bucket_number():
    assert bucket_codec.version_of(7) == 0
    assert bucket_codec.decode_writer_id(7) == 7


def test_vectorized_decode_matches_scalar():
    props = np.array([536870912, 536936448, 537067522, 7, 0], dtype=np.int32)
    assert bucket_codec.decode_writer_ids(props).tolist() == [bucket_codec.decode_writer_id(int(p)) for p in props]


def test_display_form():
    assert bucket_codec.to_string(536870912) == "536870912(1.0.0)"


def test_out_of_range_writer_is_rejected():
    with pytest.raises(ValueError):
        bucket_codec.encode_v1(4096)
