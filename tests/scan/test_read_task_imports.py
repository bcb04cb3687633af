"""A read task runs on an executor: importing the reader must not pull in driver-side modules
(the planner, the transaction store and SQLAlchemy, Spark)."""

import subprocess
import sys

DRIVER_SIDE = ("acid_source.scan.planner", "acid_source.metastore", "acid_source.resolve", "sqlalchemy", "pyspark")


def test_the_reader_imports_nothing_driver_side():
    code = ("import sys, acid_source.scan.reader, acid_source.scan.visibility, acid_source.orc.writer\n"
            f"print('\\n'.join(m for m in sys.modules if m.startswith({DRIVER_SIDE!r})))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []
