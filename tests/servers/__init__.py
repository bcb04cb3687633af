"""Real servers on loopback for the tests (PostgreSQL, an S3-compatible object store, a Spark
standalone cluster), each started by a session fixture on random ports and stopped after the
run. A missing server binary fails the tests that need it, never skips them."""
