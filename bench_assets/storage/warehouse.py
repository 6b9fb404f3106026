"""The DuckDB warehouse: safe access to the central file from many processes, and its shared reads.

DuckDB lets one process write a database file at a time. Vendor partitions fetch in parallel
processes, so each fetch archives its raw responses into its own partition file
(`partitions/<snapshot>/<vendor>.duckdb`, owned by one process, durable per response:
`storage.archive`), and the short writes to the central `bench.duckdb` are serialized with a
file lock. Every write of a partition is delete-then-insert inside one transaction
(`Warehouse.replace_rows`), so re-running a partition replaces it and nothing else.

Connections are opened by a connector (path -> context manager of a connection). Inside Dagster
it is `dagster_duckdb.DuckDBResource.get_connection` (its back-off while another process holds
the file): `bench_assets.defs.resources.WarehouseResource`. Outside Dagster (a benchmark script,
a unit test) the default opens the file directly. What DuckDBResource does not do, and this
module adds: the cross-process lock around every read-write connection, the schema, the lake's
views, read-only connections (`reading`, for schedules and sensors), and transactions.

With a lake URL (the Parquet data path, `storage.lake`), the fan-out tables (raw_responses,
response_results, row_scores) are not written to the central file at all: each vendor partition
is one Parquet object per table on any fsspec filesystem, and every connection reads those tables
through views over the objects. Vendor runs then only read the central file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
from filelock import FileLock

from bench_assets.errors import SnapshotImmutableError
from bench_assets.storage.lake import PARTITION_KEYS, LakeLayoutError, ParquetLake
from bench_assets.storage.tables import IMMUTABLE_WHEN_PUBLISHED, LAKE_TABLES, TABLES, table_docs

__all__ = [
    "ERRATA_PROCESS",
    "TABLES",
    "Connector",
    "SnapshotImmutableError",
    "Warehouse",
    "direct_connection",
    "table_docs",
]

ERRATA_PROCESS = (
    "Corrections to a published snapshot are errata: add the entry to "
    "data/snapshots/<snapshot>/errata.yaml and run `bench errata apply <snapshot> <erratum id>`, "
    "which re-runs that vendor partition into a new version and keeps the old figures."
)

Connector = Callable[[str], AbstractContextManager[duckdb.DuckDBPyConnection]]


@contextmanager
def direct_connection(path: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection opened directly (no back-off): the default outside Dagster."""
    con = duckdb.connect(path)
    try:
        yield con
    finally:
        con.close()


def ensure_schema(con: duckdb.DuckDBPyConnection, tables: Sequence[str] | None = None) -> None:
    # One catalog query instead of a CREATE per table: every connection runs this.
    existing = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND database_name = current_database()"
        ).fetchall()
    }
    for name in tables or tuple(TABLES):
        if name not in existing:
            con.execute(TABLES[name].create_sql())


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, df: pd.DataFrame) -> None:
    """Insert `df` into `table` by column name (the frame may hold a subset of the columns)."""
    if not len(df):
        return
    con.register("incoming_rows", df)
    try:
        cols = ", ".join(df.columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM incoming_rows")
    finally:
        con.unregister("incoming_rows")


def _where(where: dict[str, Any]) -> tuple[str, list[Any]]:
    return " AND ".join(f"{k} = ?" for k in where), list(where.values())


class Warehouse:
    """Access to the central DuckDB file and the per-partition archive files."""

    def __init__(
        self,
        path: str | Path,
        lock_timeout: float = 600.0,
        lake_url: str | None = None,
        connector: Connector = direct_connection,
    ):
        self.path = Path(path)
        self.lock = FileLock(str(self.path) + ".lock", timeout=lock_timeout)
        self.partitions_dir = self.path.parent / "partitions"
        # Each vendor's account-wide request log, shared by every run that calls it (fetch.pacing).
        self.pacing_dir = self.path.parent / "pacing"
        self.connector = connector
        # The Parquet data path: fan-out tables as objects under `lake_url` (None: all in the file).
        self.lake = ParquetLake(lake_url) if lake_url else None

    # ------------------------------------------------------------------ connections

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived read-write connection held under the cross-process lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.lock, self.connector(str(self.path)) as con:
            try:
                ensure_schema(con)
                if self.lake is not None:
                    self.lake.attach(con)
                yield con
            finally:
                con.close()  # also when the connector would leave it open on an error

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection inside one transaction: committed when the block ends,
        rolled back if it raises."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """A read-only connection under the lock, or None when the file does not exist yet. For
        schedules and sensors, which must never create or migrate the warehouse (DuckDBResource
        always opens read-write, so this one opens the file itself)."""
        if not self.path.exists():
            yield None
            return
        with self.lock:
            con = duckdb.connect(str(self.path), read_only=True)
            try:
                yield con
            finally:
                con.close()

    def open_file(self, path: Path) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A read-write connection to another DuckDB file (a partition archive), by the same connector."""
        path.parent.mkdir(parents=True, exist_ok=True)
        return self.connector(str(path))

    # ------------------------------------------------------------------ reads

    def query_df(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        with self.connect() as con:
            return con.execute(sql, list(params or [])).df()

    def rows(
        self,
        table: str,
        snapshot_id: str,
        vendor: str | None = None,
        columns: Sequence[str] | None = None,
        order_by: str | None = None,
        **equal: Any,
    ) -> pd.DataFrame:
        """A snapshot's rows of `table` (one vendor's with `vendor`; further `column=value` filters)."""
        where = {"snapshot_id": snapshot_id, **({"vendor": vendor} if vendor is not None else {}), **equal}
        clause, params = _where(where)
        cols = ", ".join(columns) if columns else "*"
        order = f" ORDER BY {order_by}" if order_by else ""
        return self.query_df(f"SELECT {cols} FROM {table} WHERE {clause}{order}", params)

    def split(self, snapshot_id: str) -> dict[str, str]:
        """Row id -> `public` or `holdout`, as recorded by query_split."""
        df = self.rows("query_split", snapshot_id, columns=["row_id", "split"])
        return dict(zip(df["row_id"], df["split"]))

    def status(self, snapshot_id: str) -> str | None:
        """The snapshot's recorded lifecycle state (None: not registered)."""
        df = self.rows("snapshots", snapshot_id, columns=["status"])
        return str(df["status"][0]) if len(df) and isinstance(df["status"][0], str) else None

    # ------------------------------------------------------------------ writes

    def replace_rows(self, table: str, df: pd.DataFrame, where: dict[str, str]) -> int:
        """Delete the rows matching `where`, insert `df`, in one transaction. Returns rows written."""
        if self.lake is not None and table in LAKE_TABLES:
            return self._replace_lake_partition(table, df, where)
        clause, params = _where(where)
        with self.transaction() as con:
            self._refuse_if_frozen(con, table, where)
            con.execute(f"DELETE FROM {table} WHERE {clause}", params)
            insert_frame(con, table, df)
        return len(df)

    def _refuse_if_frozen(self, con: duckdb.DuckDBPyConnection, table: str, where: dict[str, str]) -> None:
        if table in IMMUTABLE_WHEN_PUBLISHED and "snapshot_id" in where:
            status = con.execute(
                "SELECT status FROM snapshots WHERE snapshot_id = ?", [where["snapshot_id"]]
            ).fetchone()
            if status and status[0] == "published":
                raise SnapshotImmutableError(
                    f"refusing to replace {table} rows of {where['snapshot_id']}: "
                    f"the snapshot is published and immutable. {ERRATA_PROCESS}"
                )

    def _replace_lake_partition(self, table: str, df: pd.DataFrame, where: dict[str, str]) -> int:
        if set(where) != set(PARTITION_KEYS):
            raise LakeLayoutError(
                f"the Parquet data path replaces whole vendor partitions of {table} "
                f"(where snapshot_id and vendor), not rows where {sorted(where)}"
            )
        with self.connect() as con:
            self._refuse_if_frozen(con, table, where)
        assert self.lake is not None
        return self.lake.write_partition(table, df, where["snapshot_id"], where["vendor"])

    # ------------------------------------------------------------------ partition archives

    def partition_file(self, snapshot_id: str, vendor: str) -> Path:
        """The partition's local raw-response archive. With a lake, a missing archive is first
        restored from the partition's lake object, so a re-run on another machine pays nothing twice."""
        path = self.partitions_dir / snapshot_id / f"{vendor}.duckdb"
        if self.lake is not None and not path.exists():
            self.lake.restore_archive(path, snapshot_id, vendor)
        return path

    def lake_tables(self) -> tuple[str, ...]:
        """The tables stored outside the central file (none without a lake)."""
        return LAKE_TABLES if self.lake is not None else ()
