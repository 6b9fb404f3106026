"""The Parquet data path: vendor partitions as Parquet objects on any fsspec filesystem.

Runs of different vendor partitions may execute on different machines, which cannot share one
DuckDB file. With a lake location set (`BenchPaths.lake_url`, `$BENCH_LAKE_URL`: `s3://bucket/bench`,
`gs://…`, or a local directory, which stands in for object storage in the tests), each vendor
partition's rows of the fan-out tables are one Parquet object per table,

    <lake>/<table>/snapshot_id=<snapshot>/vendor=<vendor>/part.parquet

(hive-partitioned), written to a temporary name beside it and renamed into place, so a reader
sees the old partition or the new one and never half of one. Readers see each fan-out table as a
DuckDB view over `read_parquet(...)` of every object, so scoring, aggregation and publication run
from the lake unchanged. The snapshot-level tables stay in the central DuckDB file, written by
one snapshot-level run at a time; a vendor run only reads them.

While a vendor partition is being fetched, every group of responses archived on local disk is
also written as one small object under `<lake>/_archive/raw_responses/snapshot_id=…/vendor=…/`
(an archive segment) before the fetch counts it as archived, so a fetch killed with its machine
resumes on another machine without paying again for what was archived. Once the partition's
`raw_responses` object is written, its segments are removed. Segments are not part of the views.

Only DuckDB's built-in Parquet reader and writer are used (no extension to download): objects on
a remote filesystem are read through fsspec, which DuckDB accepts as a registered filesystem.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path

import duckdb
import fsspec
import pandas as pd
from fsspec.implementations.local import LocalFileSystem

from bench_assets.storage.tables import LAKE_TABLES, TABLES

PARTITION_KEYS = ("snapshot_id", "vendor")
OBJECT_NAME = "part.parquet"
ARCHIVE_KEY = ("query_id", "capability", "attempt")  # an attempt, within its partition


def _table_ddl(table: str) -> str:
    return TABLES[table].ddl()


def table_columns(table: str) -> list[str]:
    """The table's columns in definition order (as the central table has them)."""
    return TABLES[table].column_names


class LakeLayoutError(ValueError):
    """A write the Parquet data path cannot store as one vendor partition."""


class ParquetLake:
    """The fan-out tables as hive-partitioned Parquet objects under one fsspec URL."""

    def __init__(self, url: str):
        if not url:
            raise ValueError("a lake URL is required (a local directory or an fsspec URL such as s3://bucket/bench)")
        self.url = url
        # other machines write here: never answer from a cached listing
        self.fs, root = fsspec.core.url_to_fs(url, use_listings_cache=False)
        self.root = root.rstrip("/")
        self.local = isinstance(self.fs, LocalFileSystem)

    def __repr__(self) -> str:
        return f"ParquetLake({self.url!r})"

    # ------------------------------------------------------------------ layout

    def object_path(self, table: str, snapshot_id: str, vendor: str) -> str:
        """Where the partition's object lives (filesystem path, without the protocol)."""
        for name, value in (("snapshot_id", snapshot_id), ("vendor", vendor)):
            if not value or "/" in value or "=" in value:
                raise LakeLayoutError(f"{name} {value!r} cannot name a hive partition directory")
        return f"{self.root}/{table}/snapshot_id={snapshot_id}/vendor={vendor}/{OBJECT_NAME}"

    def objects(self, table: str) -> list[str]:
        """Every partition object of `table`, as URLs DuckDB can read (sorted)."""
        found = self.fs.glob(f"{self.root}/{table}/snapshot_id=*/vendor=*/{OBJECT_NAME}")
        return sorted(self._readable(p) for p in found)

    def _readable(self, path: str) -> str:
        return path if self.local else self.fs.unstrip_protocol(path)

    # ------------------------------------------------------------------ writes

    def write_partition(self, table: str, df: pd.DataFrame, snapshot_id: str, vendor: str) -> int:
        """Replace one vendor partition of `table` with `df` (no rows: the object is removed).

        The rows are typed by the table's own definition (its primary key holds within the
        partition), written to a temporary object beside the final one, then renamed over it."""
        if table not in LAKE_TABLES:
            raise LakeLayoutError(f"{table} is not stored in the lake (only {', '.join(LAKE_TABLES)})")
        final = self.object_path(table, snapshot_id, vendor)
        if df.empty:
            if self.fs.exists(final):
                self.fs.rm(final)
            return 0
        for column, expected in (("snapshot_id", snapshot_id), ("vendor", vendor)):
            if column in df.columns and set(df[column].unique()) != {expected}:
                raise LakeLayoutError(
                    f"rows for {table} partition {snapshot_id}|{vendor} carry other "
                    f"{column} values: {sorted(set(df[column].unique()) - {expected})}"
                )
        directory = final.rsplit("/", 1)[0]
        self.fs.makedirs(directory, exist_ok=True)
        temporary = f"{directory}/.{OBJECT_NAME}.{uuid.uuid4().hex}.tmp"
        try:
            if self.local:
                _write_parquet(table, df, temporary)
            else:
                with tempfile.TemporaryDirectory(prefix="bench-lake-") as scratch:
                    local = str(Path(scratch) / OBJECT_NAME)
                    _write_parquet(table, df, local)
                    self.fs.put_file(local, temporary)
            # A rename within a directory is atomic on a local or network filesystem; on an object
            # store the final key appears whole when the copy behind `mv` completes.
            superseded = self.archive_segments(snapshot_id, vendor) if table == "raw_responses" else []
            self.fs.mv(temporary, final)
        except BaseException:
            if self.fs.exists(temporary):
                self.fs.rm(temporary)
            raise
        for segment in superseded:  # held in the object now (segments written since are kept)
            self.fs.rm(segment)
        return len(df)

    # ------------------------------------------------------------------ archive segments (a fetch in progress)

    def segment_directory(self, snapshot_id: str, vendor: str) -> str:
        self.object_path("raw_responses", snapshot_id, vendor)  # validates the names
        return f"{self.root}/_archive/raw_responses/snapshot_id={snapshot_id}/vendor={vendor}"

    def archive_segments(self, snapshot_id: str, vendor: str) -> list[str]:
        return sorted(self.fs.glob(f"{self.segment_directory(snapshot_id, vendor)}/*.parquet"))

    def write_archive_segment(self, snapshot_id: str, vendor: str, rows: list[dict]) -> None:
        """Attempts just archived on local disk, as one object: durable beyond this machine."""
        directory = self.segment_directory(snapshot_id, vendor)
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex}.parquet"
        df = pd.DataFrame(rows)
        self.fs.makedirs(directory, exist_ok=True)
        if self.local:
            _write_parquet("raw_responses", df, f"{directory}/.{name}.tmp")
            self.fs.mv(f"{directory}/.{name}.tmp", f"{directory}/{name}")
            return
        with tempfile.TemporaryDirectory(prefix="bench-lake-") as scratch:
            local = str(Path(scratch) / name)
            _write_parquet("raw_responses", df, local)
            self.fs.put_file(local, f"{directory}/{name}")  # an object appears whole

    # ------------------------------------------------------------------ reads

    def attach(self, con: duckdb.DuckDBPyConnection) -> None:
        """Shadow the fan-out tables on `con` with temporary views over the lake's objects.

        A temporary view takes precedence over the table of the same name in the database file,
        so every query of the connection reads the lake. A table with no object yet is an empty
        temporary table of the same definition."""
        if not self.local:
            con.register_filesystem(self.fs)
        for table in LAKE_TABLES:
            objects = self.objects(table)
            if not objects:
                con.execute(f"CREATE TEMP TABLE {table} ({_table_ddl(table)})")
                continue
            columns = ", ".join(table_columns(table))
            # The empty typed table fixes every column's type and order; UNION ALL BY NAME also keeps
            # a column that objects written before it existed lack (as NULL).
            con.execute(f"CREATE TEMP TABLE _lake_typed_{table} ({TABLES[table].column_ddl()})")
            files = ", ".join("'" + o.replace("'", "''") + "'" for o in objects)
            con.execute(
                f"CREATE TEMP VIEW {table} AS SELECT {columns} FROM ("
                f"SELECT * FROM temp._lake_typed_{table} UNION ALL BY NAME "
                f"SELECT * FROM read_parquet([{files}], hive_partitioning = true, union_by_name = true, "
                f"hive_types = {{'snapshot_id': VARCHAR, 'vendor': VARCHAR}}))"
            )

    def read_partition(self, table: str, snapshot_id: str, vendor: str) -> pd.DataFrame | None:
        """The partition's rows with every column of the table, or None when it has no object."""
        path = self.object_path(table, snapshot_id, vendor)
        if not self.fs.exists(path):
            return None
        con = duckdb.connect()
        try:
            if not self.local:
                con.register_filesystem(self.fs)
            df = con.execute("SELECT * FROM read_parquet(?, hive_partitioning = false)", [self._readable(path)]).df()
        finally:
            con.close()
        df.insert(0, "vendor", vendor)
        df.insert(0, "snapshot_id", snapshot_id)
        return df[[c for c in table_columns(table) if c in df.columns]]

    def archived_rows(self, snapshot_id: str, vendor: str) -> pd.DataFrame | None:
        """Every attempt the lake holds for the partition: its object and the segments of a fetch
        in progress, each attempt once (None: nothing)."""
        frames = []
        whole = self.read_partition("raw_responses", snapshot_id, vendor)
        if whole is not None:
            frames.append(whole)
        segments = self.archive_segments(snapshot_id, vendor)
        if segments:
            con = duckdb.connect()
            try:
                if not self.local:
                    con.register_filesystem(self.fs)
                files = [self._readable(p) for p in segments]
                df = con.execute("SELECT * FROM read_parquet(?, hive_partitioning = false)", [files]).df()
            finally:
                con.close()
            df.insert(0, "vendor", vendor)
            df.insert(0, "snapshot_id", snapshot_id)
            frames.append(df[[c for c in table_columns("raw_responses") if c in df.columns]])
        if not frames:
            return None
        rows = pd.concat(frames, ignore_index=True)
        return rows.drop_duplicates(list(ARCHIVE_KEY), keep="first").reset_index(drop=True)

    def restore_archive(self, local_path: Path, snapshot_id: str, vendor: str) -> int:
        """Bring a vendor partition's local raw-response archive up to what the lake holds (its
        object, and the segments of a fetch interrupted on another machine), so a fetch re-run here
        pays nothing twice. Returns the attempts added (0: nothing new)."""
        raw = self.archived_rows(snapshot_id, vendor)
        if raw is None or raw.empty:
            return 0
        local_path.parent.mkdir(parents=True, exist_ok=True)
        columns = ", ".join(raw.columns)
        key = " AND ".join(f"a.{k} = r.{k}" for k in ARCHIVE_KEY)
        if local_path.exists():
            con = duckdb.connect(str(local_path))
            try:
                con.execute(f"CREATE TABLE IF NOT EXISTS raw_responses ({_table_ddl('raw_responses')})")
                con.register("restored", raw)
                added = con.execute(
                    f"INSERT INTO raw_responses ({columns}) SELECT {columns} FROM restored r "
                    f"WHERE NOT EXISTS (SELECT 1 FROM raw_responses a WHERE {key})"
                ).fetchall()
                con.execute("CHECKPOINT")
            finally:
                con.close()
            return int(added[0][0]) if added else 0
        temporary = local_path.with_name(f".{local_path.name}.{uuid.uuid4().hex}.tmp")
        con = duckdb.connect(str(temporary))
        try:
            con.execute(f"CREATE TABLE raw_responses ({_table_ddl('raw_responses')})")
            con.register("restored", raw)
            con.execute(f"INSERT INTO raw_responses ({columns}) SELECT {columns} FROM restored")
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(temporary, local_path)
        return len(raw)


def _write_parquet(table: str, df: pd.DataFrame, path: str) -> None:
    """`df` as a Parquet file typed by the table's definition, the partition columns left to the path."""
    columns = table_columns(table)
    unknown = set(df.columns) - set(columns)
    if unknown:
        raise LakeLayoutError(f"{table} has no column {sorted(unknown)}")
    stored = [c for c in columns if c not in PARTITION_KEYS]
    con = duckdb.connect()
    try:
        con.execute(f"CREATE TABLE incoming_rows ({_table_ddl(table)})")
        con.register("incoming", df)
        given = ", ".join(df.columns)
        con.execute(f"INSERT INTO incoming_rows ({given}) SELECT {given} FROM incoming")
        escaped = path.replace("'", "''")
        con.execute(
            f"COPY (SELECT {', '.join(stored)} FROM incoming_rows) TO '{escaped}' (FORMAT parquet, COMPRESSION zstd)"
        )
    finally:
        con.close()
