"""CONTRIBUTING.md's layering rules, checked statically over acid_source/ (see tests/layering.py
for what each rule checks), and proof that the checker catches each rule when it is broken."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
from layering import check_package

PACKAGE = Path(__file__).resolve().parent.parent / "acid_source"


def test_acid_source_keeps_its_layering_rules():
    violations = check_package(PACKAGE)
    assert not violations, "layering violations:\n" + "\n".join(str(v) for v in violations)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A fake package ``pkg`` with the same shape as acid_source (the rules key on its folders)."""
    root = tmp_path / "pkg"
    for folder in ("", "layout", "orc", "expressions", "scan", "write", "metastore", "spark", "dml",
                   "maintenance"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "__init__.py").touch()
    for name in ("errors", "storage", "txn", "resolve", "table", "heartbeat"):
        (root / f"{name}.py").write_text("")
    for name in ("scan/reader", "scan/planner", "write/task", "metastore/store", "spark/dml", "dml/events",
                 "layout/names", "expressions/parsing", "orc/files"):
        (root / f"{name}.py").write_text("")
    for name, text in files.items():
        (root / name).write_text(dedent(text))
    return root


def _found(root: Path) -> list[tuple[str, str, str, int]]:
    return [(v.rule, v.importer, v.imported, v.line) for v in check_package(root)]


def test_a_clean_fake_package_has_no_violation(tmp_path):
    root = _package(tmp_path, {
        "layout/x.py": "from ..errors import E\nfrom . import names\nimport numpy\n",
        "orc/x.py": "from ..layout.names import N\nfrom .files import F\nfrom ..storage import S\n",
        "expressions/x.py": "import sqlglot\nfrom .parsing import parse\nfrom ..errors import E\n",
        "scan/x.py": "from .reader import R\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from ..layout import names\n",
        "spark/x.py": "import pyspark.sql\nfrom .dml import D\n",
        "txn.py": "def begin(metastore):\n    metastore.open_transaction()\n    metastore.commit(1)\n",
        "maintenance/x.py": "def run(txn):\n    txn.commit('compaction')\n    txn.abort('failed')\n",
        "__init__.py": "from ._version_free import __version__\n",
    })
    (root / "_version_free.py").write_text("__version__ = '1'\n")
    assert _found(root) == []


@pytest.mark.parametrize("files, expected", [
    ({"layout/x.py": "import pkg.metastore.store\n"}, ("layers", "pkg.layout.x", "pkg.metastore.store", 1)),
    ({"layout/x.py": "\n\ndef f():\n    from ..scan import reader\n"},
     ("layers", "pkg.layout.x", "pkg.scan.reader", 4)),
    ({"orc/x.py": "from ..txn import begin\n"}, ("layers", "pkg.orc.x", "pkg.txn", 1)),
    ({"layout/x.py": "import sqlalchemy\n"}, ("layers", "pkg.layout.x", "sqlalchemy", 1)),
    ({"expressions/x.py": "from ..layout.names import N\n"}, ("layers", "pkg.expressions.x", "pkg.layout.names", 1)),
])
def test_the_low_layers_import_nothing_above_them(tmp_path, files, expected):
    assert expected in _found(_package(tmp_path, files))


@pytest.mark.parametrize("files, expected", [
    ({"table.py": "def merge():\n    from .spark.dml import D\n"}, ("spark", "pkg.table", "pkg.spark.dml", 2)),
    ({"dml/x.py": "from pyspark.sql import Column\n"}, ("spark", "pkg.dml.x", "pyspark.sql", 1)),
    ({"resolve.py": "from . import spark\n"}, ("spark", "pkg.resolve", "pkg.spark", 1)),
])
def test_only_the_spark_package_imports_spark(tmp_path, files, expected):
    assert expected in _found(_package(tmp_path, files))


@pytest.mark.parametrize("files, expected", [
    ({"scan/x.py": "from ..metastore import store\n"}, ("store", "pkg.scan.x", "pkg.metastore.store", 1)),
    ({"write/x.py": "\ndef f():\n    import pkg.resolve\n"}, ("store", "pkg.write.x", "pkg.resolve", 3)),
])
def test_scan_and_write_never_import_the_store(tmp_path, files, expected):
    assert expected in _found(_package(tmp_path, files))


def test_executor_side_modules_reach_nothing_driver_side_transitively(tmp_path):
    root = _package(tmp_path, {
        # scan/reader.py -> layout/x.py (fine) -> ... a function-level import of table.py (driver-side)
        "scan/reader.py": "from ..layout import x\n",
        "layout/x.py": "from . import y\n",
        "layout/y.py": "\n\ndef later():\n    from .. import table\n",
    })
    found = check_package(root)
    executor = [v for v in found if v.rule == "executor" and v.importer == "pkg.scan.reader"]
    assert [(v.imported, v.line) for v in executor] == [("pkg.table", 1)]
    assert "pkg.scan.reader -> pkg.layout.x -> pkg.layout.y -> pkg.table" in str(executor[0])


def test_a_package_init_on_the_way_counts_and_type_checking_imports_do_not(tmp_path):
    root = _package(tmp_path, {
        "dml/__init__.py": "import sqlalchemy\n",      # runs whenever pkg.dml.events is imported
        "orc/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import heartbeat\n",
    })
    found = [(v.rule, v.importer, v.imported) for v in check_package(root)]
    assert ("executor", "pkg.dml.events", "sqlalchemy") in found
    assert not [f for f in found if f[0] == "executor" and f[1] == "pkg.orc.x"]


def test_transactions_open_and_commit_only_in_txn_and_the_store(tmp_path):
    root = _package(tmp_path, {
        "write/x.py": "def f(metastore):\n    metastore.open_transaction()\n",
        "table.py": "class T:\n    def f(self):\n        self._metastore.commit(1)\n        self.store.abort(1)\n",
    })
    found = _found(root)
    assert ("transactions", "pkg.write.x", "metastore.open_transaction", 2) in found
    assert ("transactions", "pkg.table", "_metastore.commit", 3) in found
    assert ("transactions", "pkg.table", "store.abort", 4) in found


def test_no_module_imports_another_modules_private_names(tmp_path):
    root = _package(tmp_path, {
        "dml/x.py": "from ..expressions.parsing import _bounded, parse, __all__\n",
    })
    found = check_package(root)
    assert [(v.rule, v.importer, v.imported, v.line) for v in found] == [
        ("private", "pkg.dml.x", "pkg.expressions.parsing", 1)]
    assert "_bounded" in str(found[0]) and "__all__" not in str(found[0])


def test_every_named_side_is_a_real_module():
    """The executor- and driver-side lists name modules that exist: a rename must update them."""
    from layering import DRIVER_SIDE, EXECUTOR_SIDE, load_package

    modules = load_package(PACKAGE)
    for pattern in EXECUTOR_SIDE + DRIVER_SIDE:
        stem = "acid_source." + pattern.removesuffix(".**")
        assert stem in modules, f"{pattern} names no module of acid_source"


def test_an_import_cycle_is_found_lazy_imports_and_import_module_included(tmp_path):
    root = _package(tmp_path, {
        "maintenance/x.py": "from ..txn import begin\n",
        "txn.py": "def later():\n    from .maintenance import x\n",
        "dml/a.py": "import importlib\n\ndef b():\n    return importlib.import_module('pkg.dml.b')\n",
        "dml/b.py": "from . import a\n",
        "heartbeat.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import resolve\n",
        "resolve.py": "from . import heartbeat\n",
    })
    cycles = sorted((v.importer, v.imported) for v in check_package(root) if v.rule == "cycles")
    assert cycles == [("pkg.dml.a", "pkg.dml.b"), ("pkg.maintenance.x", "pkg.txn")]


def test_the_declared_door_from_the_core_table_to_spark_table_is_the_one_exception(tmp_path):
    root = _package(tmp_path, {
        "spark/table.py": "from ..table import T\n",
        "table.py": "import importlib\n\ndef spark_table():\n    return importlib.import_module('pkg.spark.table')\n",
    })
    assert _found(root) == []
    (root / "heartbeat.py").write_text("def spark_table():\n    from .spark import table\n")  # not a door
    (root / "spark" / "table.py").write_text("from ..table import T\nfrom .. import heartbeat\n")
    assert {v[0] for v in _found(root)} == {"spark", "cycles"}


def test_no_module_uses_another_modules_private_attributes(tmp_path):
    root = _package(tmp_path, {
        "dml/x.py": dedent("""\
            class Own:
                def __init__(self):
                    self._mine = 1

                def peek(self, other, planner, spark):
                    spark._jsparkSession
                    other._mine
                    self._inherited()
                    return planner._dir_slices()
        """),
    })
    found = [(v.rule, v.importer, v.imported, v.line) for v in check_package(root)]
    assert found == [("private-attribute", "pkg.dml.x", "planner._dir_slices", 9)]
