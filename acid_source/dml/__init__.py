"""UPDATE, DELETE and MERGE: change events, their execution in a transaction, the SQL entry point."""
