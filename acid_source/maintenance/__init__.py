"""Keeping tables healthy: compaction (``compaction_plan``, ``compaction_tasks`` on executors,
``compactor`` on the driver), when to compact (``thresholds``, the ``initiator`` pass,
``auto_compact`` after a data write), the cleaner (``cleaner``: vacuum, honouring read leases)
and the clean-up of failed writes (``aborted``)."""
