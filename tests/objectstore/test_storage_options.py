"""The storage options of Spark's string options (acid_source/options.py): fs.<name>,
fs.<a>.<b> for nested dicts, the storageOptions JSON; conflicts, bad JSON and credentials inside
JSON are typed errors naming the option, never echoing a value."""

from __future__ import annotations

import pickle

import pytest

from acid_source.errors import InvalidOptionError
from acid_source.spark.options import read_spec, spark_storage_options, storage_options_from, write_spec

NESTED = {"key": "k", "secret": "s", "anon": False,
          "client_kwargs": {"endpoint_url": "http://e:9000", "region_name": "r"},
          "config_kwargs": {"s3": {"addressing_style": "path"}, "retries": {"max_attempts": 3}}}


def test_nested_and_typed_options_round_trip_through_spark_strings():
    strings = spark_storage_options(tuple(sorted(NESTED.items())))
    assert all(isinstance(v, str) for v in strings.values())
    assert strings["fs.client_kwargs.endpoint_url"] == "http://e:9000" and strings["fs.secret"] == "s"
    assert "s" not in strings["storageOptions"].split('"')  # secrets stay out of the JSON
    assert dict(storage_options_from(strings)) == NESTED
    read = read_spec({"path": "s3://b/t", **strings})
    write = write_spec({"path": "s3://b/t", **strings})
    assert dict(read.storage_options) == dict(write.storage_options) == NESTED


def test_the_prefix_scheme_builds_nested_dicts():
    parsed = dict(storage_options_from({"fs.client_kwargs.endpoint_url": "http://x", "fs.key": "k",
                                        "STORAGEOPTIONS": '{"client_kwargs": {"region_name": "r"}}'}))
    assert parsed == {"key": "k", "client_kwargs": {"endpoint_url": "http://x", "region_name": "r"}}


@pytest.mark.parametrize("options, option, fragment", [
    ({"storageOptions": '{"anon": tru'}, "storageOptions", "not valid JSON"),
    ({"storageOptions": "[1, 2]"}, "storageOptions", "got a JSON list"),
    ({"storageOptions": '{"secret": "hunter2"}'}, "storageOptions", "fs.secret"),
    ({"storageOptions": '{"client_kwargs": {"aws_session_token": "hunter2"}}'}, "storageOptions",
     "fs.client_kwargs.aws_session_token"),
    ({"storageOptions": '{"key": "hunter2"}'}, "storageOptions", "fs.key"),
    ({"fs.client_kwargs": "x", "fs.client_kwargs.endpoint_url": "y"}, "fs.client_kwargs.endpoint_url",
     "fs.client_kwargs"),
    ({"storageOptions": '{"anon": true}', "fs.anon": "false"}, "fs.anon", "storageOptions"),
    ({"fs.client_kwargs..x": "1"}, "fs.client_kwargs..x", "no empty names"),
])
def test_bad_storage_options_are_typed_errors_naming_the_option(options, option, fragment):
    with pytest.raises(InvalidOptionError) as info:
        read_spec({"path": "s3://b/t", **options})
    assert info.value.option == option and fragment in str(info.value)
    assert "hunter2" not in str(info.value)
    assert pickle.loads(pickle.dumps(info.value)).args == info.value.args
