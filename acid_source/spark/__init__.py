"""The Spark adapter layer: the only part of acidorc that imports pyspark."""
