"""Keeping tables healthy: removing what failed writes left behind (and, later, compaction
and the cleaner)."""
