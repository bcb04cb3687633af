"""Making ``acidorc`` available in a SparkSession."""

from __future__ import annotations

import os
import sys
from typing import Any

from .. import settings
from ..deprecation import keyword_only, renamed
from ..errors import InvalidArgumentError

# Spark settings acidorc relies on; spark-conf/spark-defaults.conf carries the same ones.
RECOMMENDED_CONF = {
    # Spark only offers filters to Python data sources when this is on (off by default).
    "spark.sql.python.filterPushdown.enabled": "true",
    # Below Int.MaxValue Spark measures the Arrow batch it feeds a Python writer after every
    # row; that alone cost as much as the whole write (benchmarks/write_benchmark.py: 2.15x
    # -> 1.40x of df.write.orc). Batches stay capped by arrow.maxRecordsPerBatch.
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
}


def check_session(spark: Any, argument: str = "sparkSession") -> None:
    """``spark`` must be a SparkSession (classic or Connect: anything that reads and creates
    DataFrames); else a typed error naming the argument."""
    if not (hasattr(spark, "read") and hasattr(spark, "createDataFrame")):
        raise InvalidArgumentError(argument, f"expected a SparkSession, got {type(spark).__name__}")


def register(spark) -> None:
    """Register the ``acidorc`` data source in ``spark`` and enable filter pushdown.

    Works for the DataFrame API and for ``CREATE TEMPORARY VIEW v USING acidorc OPTIONS (...)``.
    When Spark already knows ``acidorc`` -- installed packages are registered statically
    (``pyspark_acidorc``), or ``register`` ran before -- the source is left as it is:
    registering again would make Spark log a WARN about replacing it in every session.
    """
    from .datasource import SOURCE_NAME, AcidOrcDataSource

    if not is_registered(spark, SOURCE_NAME):
        spark.dataSource.register(AcidOrcDataSource)
    for key, value in RECOMMENDED_CONF.items():
        spark.conf.set(key, value)


def is_registered(spark, name: str) -> bool:
    """Whether the session already has a Python data source called ``name``.

    Asks the JVM's ``DataSourceManager`` (the same check Spark makes before it warns); pyspark
    has no Python API for it. False where that cannot be asked (Spark Connect, other Spark
    versions), and then ``register`` registers as before.
    """
    try:
        manager = spark._jsparkSession.sessionState().dataSourceManager()
        return bool(manager.dataSourceExists(name))
    except Exception:  # no JVM session (Spark Connect) or no such method: cannot tell
        return False


def configure(builder):
    """Apply acidorc's settings to a ``SparkSession.Builder`` before the session starts.

    Spark's Python workers must run the driver's interpreter (the one acidorc is installed
    in); otherwise tasks die importing it. Unless the user chose one, use ours.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    for key, value in RECOMMENDED_CONF.items():
        builder = builder.config(key, value)
    return builder


@renamed(app_name="appName", metastore_url="metastoreUrl")
@keyword_only
def get_or_create_session(appName: str = "acidorc", *, master: str | None = None, conf: dict | None = None,
                          metastoreUrl: str | None = None):
    """A SparkSession with acidorc registered: ``configure`` + ``getOrCreate`` + ``register``.

    ``metastoreUrl`` (a SQLAlchemy URL, or ``thrift://`` for a Hive Metastore) becomes the
    default transaction store of every read and write in this application (Spark's Python
    workers inherit it).

    >>> spark = acid_source.get_or_create_session(master="spark://master:7077")  # doctest: +SKIP
    """
    from pyspark.sql import SparkSession

    metastore_url = metastoreUrl
    if metastore_url:
        os.environ[settings.METASTORE_URL.name] = metastore_url
    builder = SparkSession.builder.appName(appName)
    if master:
        builder = builder.master(master)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = configure(builder).getOrCreate()
    register(spark)
    if metastore_url:
        hand_store_to_workers(spark, metastore_url)
    return spark


def hand_store_to_workers(spark, url: str) -> None:
    """Make ``url`` the store of the Python workers that plan this session's reads.

    Spark starts them with the JVM's environment plus the context's (``SparkContext.environment``,
    captured when a data source is registered). A JVM started before ``url`` was put in this
    process's environment (a session that already existed) would have them read another store,
    one that may not know the table and would read it as written by another engine, a dead
    writer's files included: the URL goes into the context's environment, and acidorc is
    registered again so that its workers start with it (Spark logs that it replaced the source).
    A URL with a password is never handed to Spark (it would travel with tasks): then this is a
    :class:`~acid_source.errors.MetastoreError` asking for the variable before the first session.
    """
    from ..errors import MetastoreError
    from ..metastore.urls import display_url, parse_url

    name = settings.METASTORE_URL.name
    try:
        context = spark.sparkContext
        in_jvm = (context._jvm.System.getenv(name) or "").strip()
    except Exception:  # no JVM at hand (Spark Connect): the workers' environment cannot be checked
        return
    handed = context.environment.get(name)
    if handed == url or (handed is None and in_jvm == url.strip()):
        return
    if in_jvm != url.strip() and parse_url(url).password is not None:
        raise MetastoreError(
            f"this SparkSession's JVM started before the metastore URL {display_url(parse_url(url))!r} was chosen, "
            f"so the Python workers that plan its reads would use another store; a URL with a password is not "
            f"handed to Spark: set ${name} before the first SparkSession of the application starts",
            url=display_url(parse_url(url)))
    from .datasource import AcidOrcDataSource

    if in_jvm == url.strip():
        context.environment.pop(name, None)  # the JVM's own is the one again
    else:
        context.environment[name] = url
    spark.dataSource.register(AcidOrcDataSource)
