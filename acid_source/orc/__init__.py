"""ORC files of ACID tables: opening them (data through pyarrow, stripes and statistics through
pyorc, the ACID footer metadata), writing insert and delete event files, the growing file of a
streaming batch, codecs and storable column types."""
