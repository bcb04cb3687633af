"""Real driver connections (pysqlite, psycopg) whose COMMIT misbehaves on cue: the store's
answer-lost and retry paths, tested on each backend."""

from __future__ import annotations

import sqlite3

from sqlalchemy import event

LOCKED = "database is locked"


def commit_error(backend: str, message: str) -> Exception:
    """The driver's error for a failed COMMIT: ``LOCKED`` is lock contention (the store runs the
    call again: SQLite's "database is locked", PostgreSQL's serialization failure 40001); any
    other message is an error the store does not retry."""
    if backend == "sqlite":
        return sqlite3.OperationalError(message)
    import psycopg

    if message == LOCKED:
        return psycopg.errors.SerializationFailure(f"could not serialize access ({message})")
    return psycopg.OperationalError(message)


def lossy_commits(ms, on_commit):
    """From now on ``ms`` talks to its database through real driver connections (pysqlite or
    psycopg) whose ``commit()`` calls ``on_commit(conn, commit, backend)`` instead (``commit``
    is the real one). Returns the function that undoes it."""
    engine = ms._get_engine()
    backend = engine.url.get_backend_name()
    if backend == "sqlite":
        class SqliteConn(sqlite3.Connection):
            def commit(self):
                return on_commit(self, super().commit, backend)

        def use(dialect, conn_rec, cargs, cparams):
            cparams["factory"] = SqliteConn
    else:
        import psycopg

        class PgConn(psycopg.Connection):
            def commit(self):
                return on_commit(self, super().commit, backend)

        def use(dialect, conn_rec, cargs, cparams):
            return PgConn.connect(*cargs, **cparams)

    event.listen(engine, "do_connect", use)
    engine.dispose()  # pooled connections were made without it

    def undo():
        event.remove(engine, "do_connect", use)
        ms.close()

    return undo
