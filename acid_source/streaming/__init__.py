"""Streaming and change data: the change feed of a table's committed writes (issue 16)."""
