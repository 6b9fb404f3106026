"""The warehouse: table declarations, the central DuckDB file, partition archives, the Parquet lake and the snapshot lifecycle."""
