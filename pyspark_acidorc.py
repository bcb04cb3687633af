"""Static registration hook: Spark imports every top-level ``pyspark_*`` module on the Python
path and registers its ``DefaultSource``, so installing acidorc is enough for
``spark.read.format("acidorc")`` (see spark-conf/ for the settings to go with it)."""

from acid_source.spark.datasource import AcidOrcDataSource as DefaultSource

__all__ = ["DefaultSource"]
