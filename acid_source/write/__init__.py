"""Writing: routing rows to partitions and buckets and writing a task's files (``rows``,
``task``: executor), what a write commits (``job``: driver, on the caller's transaction) and
removing dead write ids' directories (``cleanup``). A write never talks to the transaction
store: it receives a plan."""
