"""The DuckDB warehouse: its tables, and safe access from many processes.

DuckDB lets one process write a database file at a time. Vendor partitions fetch in parallel
processes, so each fetch archives its raw responses into its own partition file
(`partitions/<snapshot>/<vendor>.duckdb`, owned by one process, durable per response), and the
short writes to the central `bench.duckdb` are serialized with a file lock. Every write of a
partition is delete-then-insert inside one transaction, so re-running a partition replaces it
and nothing else.

With a lake URL (the Parquet data path, `bench_assets.lake`), the fan-out tables (raw_responses,
response_results, row_scores) are not written to the central file at all: each vendor partition
is one Parquet object per table on any fsspec filesystem, and every connection reads those tables
through views over the objects. Vendor runs then only read the central file.
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import pandas as pd
from filelock import FileLock

# Every table, its grain and its columns. The README's warehouse section is generated from this.
TABLES: dict[str, tuple[str, str]] = {
    "snapshots": ("one row per snapshot", """
        snapshot_id VARCHAR PRIMARY KEY, mode VARCHAR, manifest_path VARCHAR, manifest_sha256 VARCHAR,
        manifest_json VARCHAR, status VARCHAR, registered_at TIMESTAMPTZ"""),
    "golden_rows": ("one row per golden row of a snapshot", """
        snapshot_id VARCHAR, row_id VARCHAR, cohort VARCHAR, stratum VARCHAR, provenance VARCHAR,
        task_type VARCHAR, request_text VARCHAR, task_json VARCHAR, verification_json VARCHAR,
        source_file VARCHAR, source_line INTEGER, PRIMARY KEY (snapshot_id, row_id)"""),
    "golden_verifications": ("one row per golden row: its latest verification", """
        snapshot_id VARCHAR, row_id VARCHAR, checked_at TIMESTAMPTZ, checked_url VARCHAR, http_status INTEGER,
        content_sha256 VARCHAR, passed BOOLEAN, failures_json VARCHAR, PRIMARY KEY (snapshot_id, row_id)"""),
    "query_split": ("one row per golden row: public or holdout", """
        snapshot_id VARCHAR, row_id VARCHAR, stratum VARCHAR, split VARCHAR, PRIMARY KEY (snapshot_id, row_id)"""),
    "raw_responses": ("one row per HTTP attempt to a vendor (every attempt is evidence)", """
        snapshot_id VARCHAR, vendor VARCHAR, query_id VARCHAR, role VARCHAR, capability VARCHAR,
        attempt INTEGER, started_at TIMESTAMPTZ, latency_ms DOUBLE, request_json VARCHAR,
        http_status INTEGER, response_headers_json VARCHAR, body VARCHAR, body_sha256 VARCHAR,
        transport_error VARCHAR, final BOOLEAN, adapter_version VARCHAR,
        PRIMARY KEY (snapshot_id, vendor, query_id, capability, attempt)"""),
    "response_results": ("one row per result a vendor returned for a golden row (parsed from raw_responses)", """
        snapshot_id VARCHAR, vendor VARCHAR, row_id VARCHAR, rank INTEGER, url VARCHAR, url_normalized VARCHAR,
        title VARCHAR, snippet VARCHAR, published VARCHAR, content_chars INTEGER"""),
    "row_scores": ("one row per vendor per golden row: class and scores", """
        snapshot_id VARCHAR, vendor VARCHAR, row_id VARCHAR, split VARCHAR, stratum VARCHAR, cohort VARCHAR,
        task_type VARCHAR, response_class VARCHAR, n_results INTEGER, first_hit_rank INTEGER,
        hit_at_1 BOOLEAN, hit_at_3 BOOLEAN, hit_at_5 BOOLEAN, hit_at_10 BOOLEAN, fidelity DOUBLE,
        fidelity_label VARCHAR, answer_score DOUBLE, answer_rule VARCHAR, correct BOOLEAN, billed_usd DOUBLE,
        latency_ms DOUBLE, attempts INTEGER, request_id VARCHAR, error_detail VARCHAR,
        PRIMARY KEY (snapshot_id, vendor, row_id)"""),
    "vendor_metrics": ("one row per vendor x scope x metric of a snapshot: value, n and 95 % interval", """
        snapshot_id VARCHAR, vendor VARCHAR, scope VARCHAR, scope_value VARCHAR, metric VARCHAR,
        value DOUBLE, n INTEGER, low DOUBLE, high DOUBLE"""),
    "agent_trials": ("one row per vendor per agent-ready trial (harness or hand-entered), with its evidence", """
        snapshot_id VARCHAR, trial_id VARCHAR, vendor VARCHAR, method VARCHAR, mode VARCHAR, recorded_by VARCHAR,
        trial_date DATE, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, agent_ready BOOLEAN, outcome VARCHAR,
        reason VARCHAR, evidence_url VARCHAR, key_fingerprint VARCHAR, steps_json VARCHAR, source VARCHAR,
        PRIMARY KEY (snapshot_id, trial_id)"""),
    "sentinel_pages": ("one row per sentinel page of a snapshot: its unique phrase and authoritative publish time", """
        snapshot_id VARCHAR, batch_id VARCHAR, sentinel_id VARCHAR, url VARCHAR, phrase VARCHAR, title VARCHAR,
        page_json VARCHAR, published_at TIMESTAMPTZ, recorded_at TIMESTAMPTZ, mode VARCHAR, deploy_path VARCHAR,
        PRIMARY KEY (snapshot_id, sentinel_id)"""),
    "sentinel_probes": ("one row per probe (vendor x sentinel x 6-hourly tick): outcome and the final raw response", """
        snapshot_id VARCHAR, vendor VARCHAR, sentinel_id VARCHAR, tick_at TIMESTAMPTZ, probed_at TIMESTAMPTZ,
        query VARCHAR, response_class VARCHAR, found BOOLEAN, rank INTEGER, n_results INTEGER, billed_usd DOUBLE,
        latency_ms DOUBLE, attempts INTEGER, http_status INTEGER, request_json VARCHAR,
        response_headers_json VARCHAR, body VARCHAR, body_sha256 VARCHAR, transport_error VARCHAR,
        request_id VARCHAR, adapter_version VARCHAR, PRIMARY KEY (snapshot_id, vendor, sentinel_id, tick_at)"""),
    "publications": ("one row per published file of a snapshot", """
        snapshot_id VARCHAR, path VARCHAR, sha256 VARCHAR, bytes BIGINT, published_at TIMESTAMPTZ,
        PRIMARY KEY (snapshot_id, path)"""),
    # Integrity (bench_assets.integrity): lifecycle, decoys, review, dead rows, errata.
    "snapshot_lifecycle": ("one row per lifecycle transition of a snapshot (draft, frozen, published)", """
        snapshot_id VARCHAR, status VARCHAR, previous VARCHAR, changed_at TIMESTAMPTZ, note VARCHAR"""),
    "decoy_queries": ("one row per decoy sent with the holdout (private: never published, never scored)", """
        snapshot_id VARCHAR, row_id VARCHAR, stratum VARCHAR, task_type VARCHAR, request_text VARCHAR,
        PRIMARY KEY (snapshot_id, row_id)"""),
    "review_packets": ("one row per vendor per snapshot: the review packet sent and when", """
        snapshot_id VARCHAR, vendor VARCHAR, sent_on DATE, business_days INTEGER, opens_on DATE,
        packet_path VARCHAR, packet_sha256 VARCHAR, public_rows INTEGER, responses INTEGER,
        PRIMARY KEY (snapshot_id, vendor)"""),
    "vendor_replies": ("one row per vendor reply to a snapshot, stored and published verbatim", """
        snapshot_id VARCHAR, vendor VARCHAR, received_on DATE, path VARCHAR, sha256 VARCHAR,
        PRIMARY KEY (snapshot_id, vendor)"""),
    "dead_rows": ("one row per golden row that failed verification: since when, and its replacement", """
        snapshot_id VARCHAR, row_id VARCHAR, stratum VARCHAR, task_type VARCHAR, split VARCHAR, dead_since DATE,
        failures_json VARCHAR, replacement_row_id VARCHAR, replaced_on DATE, PRIMARY KEY (snapshot_id, row_id)"""),
    "errata": ("one row per erratum applied: the version it corrected and the version it created", """
        snapshot_id VARCHAR, erratum_id VARCHAR, corrected_version VARCHAR, new_version VARCHAR, vendor VARCHAR,
        action VARCHAR, applied_at TIMESTAMPTZ, entry_json VARCHAR, PRIMARY KEY (snapshot_id, erratum_id)"""),
}

# What a snapshot published: once it is published, nothing replaces these rows (an erratum makes a
# new version instead). Sentinel probes keep running after publication, so they are not frozen.
IMMUTABLE_WHEN_PUBLISHED = frozenset(TABLES) - {"sentinel_pages", "sentinel_probes", "snapshot_lifecycle",
                                               "vendor_replies", "errata"}
ERRATA_PROCESS = ("Corrections to a published snapshot are errata: add the entry to "
                  "data/snapshots/<snapshot>/errata.yaml and run `bench errata apply <snapshot> <erratum id>`, "
                  "which re-runs that vendor partition into a new version and keeps the old figures.")


class SnapshotImmutableError(RuntimeError):
    """A write that would replace rows of a published snapshot."""

PARTITION_TABLES = ("raw_responses",)


def ensure_schema(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...] | None = None) -> None:
    # One catalog query instead of a CREATE per table: every connection runs this.
    existing = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
                                          "AND database_name = current_database()").fetchall()}
    for name in tables or tuple(TABLES):
        if name not in existing:
            con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({TABLES[name][1]})")


def _connect_with_retry(path: str, read_only: bool, attempts: int = 40) -> duckdb.DuckDBPyConnection:
    # Another process may hold the file (e.g. an operator's read-only notebook); back off, then give up.
    delay = 0.05
    for attempt in range(attempts):
        try:
            return duckdb.connect(path, read_only=read_only)
        except (duckdb.IOException, RuntimeError):
            if attempt == attempts - 1:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    raise AssertionError("unreachable")


class Warehouse:
    """Access to the central DuckDB file and the per-partition fetch files."""

    def __init__(self, path: str | Path, lock_timeout: float = 600.0, lake_url: str | None = None):
        self.path = Path(path)
        self.lock = FileLock(str(self.path) + ".lock", timeout=lock_timeout)
        self.partitions_dir = self.path.parent / "partitions"
        # Each vendor's account-wide request log, shared by every run that calls it (bench_assets.pacing).
        self.pacing_dir = self.path.parent / "pacing"
        # The Parquet data path: fan-out tables as objects under `lake_url` (None: all in the file).
        self.lake = None
        if lake_url:
            from bench_assets.lake import ParquetLake

            self.lake = ParquetLake(lake_url)

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived read-write connection held under the cross-process lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.lock:
            con = _connect_with_retry(str(self.path), read_only=False)
            try:
                ensure_schema(con)
                if self.lake is not None:
                    self.lake.attach(con)
                yield con
            finally:
                con.close()

    def query_df(self, sql: str, params: list | None = None) -> pd.DataFrame:
        with self.connect() as con:
            return con.execute(sql, params or []).df()

    def replace_rows(self, table: str, df: pd.DataFrame, where: dict[str, str]) -> int:
        """Delete the rows matching `where`, insert `df`, in one transaction. Returns rows written."""
        if self.lake is not None and table in self.lake_tables():
            return self._replace_lake_partition(table, df, where)
        clause = " AND ".join(f"{k} = ?" for k in where)
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                if table in IMMUTABLE_WHEN_PUBLISHED and "snapshot_id" in where:
                    status = con.execute("SELECT status FROM snapshots WHERE snapshot_id = ?",
                                         [where["snapshot_id"]]).fetchone()
                    if status and status[0] == "published":
                        raise SnapshotImmutableError(f"refusing to replace {table} rows of {where['snapshot_id']}: "
                                                     f"the snapshot is published and immutable. {ERRATA_PROCESS}")
                con.execute(f"DELETE FROM {table} WHERE {clause}", list(where.values()))
                if len(df):
                    con.register("incoming", df)
                    cols = ", ".join(df.columns)
                    con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM incoming")
                    con.unregister("incoming")
                con.execute("COMMIT")
            except Exception:
                con.execute("ROLLBACK")
                raise
        return len(df)

    def partition_file(self, snapshot_id: str, vendor: str) -> Path:
        """The partition's local raw-response archive. With a lake, a missing archive is first
        restored from the partition's lake object, so a re-run on another machine pays nothing twice."""
        path = self.partitions_dir / snapshot_id / f"{vendor}.duckdb"
        if self.lake is not None and not path.exists():
            self.lake.restore_archive(path, snapshot_id, vendor)
        return path

    def lake_tables(self) -> tuple[str, ...]:
        """The tables stored outside the central file (none without a lake)."""
        from bench_assets.lake import LAKE_TABLES

        return LAKE_TABLES if self.lake is not None else ()

    def _replace_lake_partition(self, table: str, df: pd.DataFrame, where: dict[str, str]) -> int:
        from bench_assets.lake import PARTITION_KEYS, LakeLayoutError

        if set(where) != set(PARTITION_KEYS):
            raise LakeLayoutError(f"the Parquet data path replaces whole vendor partitions of {table} "
                                  f"(where snapshot_id and vendor), not rows where {sorted(where)}")
        status = self.query_df("SELECT status FROM snapshots WHERE snapshot_id = ?", [where["snapshot_id"]])
        if table in IMMUTABLE_WHEN_PUBLISHED and len(status) and status["status"][0] == "published":
            raise SnapshotImmutableError(f"refusing to replace {table} rows of {where['snapshot_id']}: "
                                         f"the snapshot is published and immutable. {ERRATA_PROCESS}")
        assert self.lake is not None
        return self.lake.write_partition(table, df, where["snapshot_id"], where["vendor"])


def table_docs() -> str:
    """Markdown documentation of the warehouse tables (name, grain, columns)."""
    lines = ["| table | grain | columns |", "| --- | --- | --- |"]
    for name, (grain, ddl) in TABLES.items():
        columns = re.sub(r"PRIMARY KEY \([^)]*\)", "", ddl)
        cols = [c.strip().split()[0] for c in columns.split(",") if c.strip()]
        lines.append(f"| `{name}` | {grain} | {', '.join(cols)} |")
    return "\n".join(lines)
