"""The ``ACIDORC_*`` environment variables: one declaration each (acid_source/settings.py),
parsed the same way everywhere, errors naming the variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acid_source import settings
from acid_source.errors import InvalidOptionError

PACKAGE = Path(__file__).resolve().parent.parent / "acid_source"


def test_every_acidorc_variable_the_package_mentions_is_declared_once():
    declared = [s.name for s in settings.ALL]
    assert len(declared) == len(set(declared))
    mentioned = set()
    for path in PACKAGE.rglob("*.py"):
        mentioned |= set(re.findall(r"ACIDORC_[A-Z][A-Z_]*[A-Z](?![A-Z_*])", path.read_text(encoding="utf-8")))
    assert mentioned <= set(declared), sorted(mentioned - set(declared))
    assert set(settings.COMPACTOR.values()) <= set(settings.ALL)


def test_unset_or_blank_means_the_default():
    for setting in settings.ALL:
        assert setting.get({}) == setting.default
        assert setting.get({setting.name: "  "}) == setting.default


@pytest.mark.parametrize("setting, text, value", [
    (settings.READ_LEASE_SECONDS, "0", 0.0),
    (settings.READ_LEASE_SECONDS, " 12.5 ", 12.5),
    (settings.VACUUM_RETENTION_SECONDS, "60", 60.0),
    (settings.HEARTBEAT_SECONDS, "1", 1.0),
    (settings.AUTO_COMPACT, "false", False),
    (settings.AUTO_COMPACT, "ON", True),
    (settings.VACUUM_AFTER_COMPACTION, "no", False),
    (settings.AUTO_COMPACT_MAX_BYTES, "0", 0),
    (settings.AUTO_COMPACT_MAX_BYTES, "1024", 1024),
    (settings.COMPACTOR_DELTA_NUM_THRESHOLD, "4", 4),
    (settings.COMPACTOR_DELTA_PCT_THRESHOLD, "0.5", 0.5),
    (settings.COMPACTOR_CHECK_INTERVAL, "500ms", 0.5),
    (settings.COMPACTOR_CHECK_INTERVAL, "5m", 300.0),
    (settings.COMPACTOR_CHECK_INTERVAL, "7", 7.0),
    (settings.COMPACTOR_INITIATOR_FAILED_COMPACTS_THRESHOLD, "1", 1),
    (settings.METASTORE_URL, " sqlite:///x.db ", "sqlite:///x.db"),
    (settings.PAUSE_TIMEOUT, "2", 2.0),
])
def test_values_parse(setting, text, value):
    assert setting.get({setting.name: text}) == value


@pytest.mark.parametrize("setting, text, expected", [
    (settings.READ_LEASE_SECONDS, "soon", "expected a number of seconds >= 0, got 'soon'"),
    (settings.READ_LEASE_SECONDS, "-1", "expected a number of seconds >= 0"),
    (settings.VACUUM_RETENTION_SECONDS, "inf", "expected a number of seconds >= 0"),
    (settings.AUTO_COMPACT, "maybe", "expected true or false, got 'maybe'"),
    (settings.VACUUM_AFTER_COMPACTION, "2", "expected true or false"),
    (settings.AUTO_COMPACT_MAX_BYTES, "1.5", "expected a number of bytes >= 0, got '1.5'"),
    (settings.COMPACTOR_DELTA_NUM_THRESHOLD, "three",
     "hive.compactor.delta.num.threshold must be an integer >= 0, got 'three'"),
    (settings.COMPACTOR_DELTA_PCT_THRESHOLD, "nan", "hive.compactor.delta.pct.threshold must be a number >= 0"),
    (settings.COMPACTOR_CHECK_INTERVAL, "5 fortnights", "must be a duration"),
    (settings.COMPACTOR_INITIATOR_FAILED_COMPACTS_THRESHOLD, "0", "must be an integer >= 1"),
    (settings.PAUSE_TIMEOUT, "x", "expected a number of seconds >= 0"),
])
def test_a_bad_value_names_the_variable(setting, text, expected):
    with pytest.raises(InvalidOptionError) as info:
        setting.get({setting.name: text})
    assert info.value.option == f"${setting.name}"
    assert str(info.value).startswith(f"option '${setting.name}': ") and expected in str(info.value)


def test_a_malformed_heartbeat_interval_means_the_default_as_it_always_has():
    for text in ("soon", "0", "-3", "nan"):
        assert settings.HEARTBEAT_SECONDS.get({settings.HEARTBEAT_SECONDS.name: text}) == 30.0


def test_compactor_parsers_serve_table_properties_too():
    parse = settings.compactor_threshold("hive.compactor.delta.pct.threshold", "number")
    assert parse("compactorthreshold.hive.compactor.delta.pct.threshold", "0.2") == 0.2
    with pytest.raises(InvalidOptionError, match="option 'compactorthreshold.x'"):
        parse("compactorthreshold.x", "-1")
    assert settings.env_name("hive.compactor.check.interval") == "ACIDORC_COMPACTOR_CHECK_INTERVAL"


def test_reads_happen_when_asked_not_at_import(monkeypatch):
    monkeypatch.setenv("ACIDORC_READ_LEASE_SECONDS", "7")
    assert settings.READ_LEASE_SECONDS.get() == 7.0
