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

Every change to the central file is also copied into the custody journal (`storage.journal`), so
a lost, unreadable or rolled-back warehouse is refused (`WarehouseLostError`, naming what is
missing) instead of being silently re-created empty, and is rebuilt from the journal and the
partition archives or the lake (`bench warehouse restore`, `storage.restore`).

With a shared URL (`storage.shared`), the central file's home is object storage, one version per
change, and machines take turns through Postgres: no filesystem is shared between them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
from filelock import FileLock

from bench_assets.errors import SnapshotImmutableError, WarehouseLostError
from bench_assets.runtime import reopen_in_children
from bench_assets.storage.file_health import is_damage
from bench_assets.storage.file_state import CHECKED
from bench_assets.storage.journal import (
    POSITION_DDL,
    POSITION_TABLE,
    Change,
    CustodyJournal,
    journal_url_beside,
    journaled,
)
from bench_assets.storage.lake import PARTITION_KEYS, LakeLayoutError, ParquetLake
from bench_assets.storage.shared import SharedWarehouse
from bench_assets.storage.tables import IMMUTABLE_WHEN_PUBLISHED, LAKE_TABLES, TABLES, table_docs

__all__ = [
    "ERRATA_PROCESS",
    "TABLES",
    "Connector",
    "SnapshotImmutableError",
    "Warehouse",
    "WarehouseLostError",
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
    _add_new_columns(con, [n for n in tables or tuple(TABLES) if n in existing])
    if tables is None and POSITION_TABLE not in existing:
        con.execute(POSITION_DDL)


def _add_new_columns(con: duckdb.DuckDBPyConnection, names: Sequence[str]) -> None:
    """Add to tables made before a column was declared (e.g. `golden_rows.published_on`) the
    columns they lack, empty: a column is only ever added at the end, never changed or dropped."""
    if not names:
        return
    have: dict[str, set[str]] = {}
    for table, column in con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND database_name = current_database()"
    ).fetchall():
        have.setdefault(table, set()).add(column)
    for name in names:
        for column in TABLES[name].columns:
            if column.name not in have.get(name, set()):
                con.execute(f"ALTER TABLE {name} ADD COLUMN {column.name} {column.type}")


# How DuckDB says a file is not a database it can read (truncated, overwritten, another format).
_UNREADABLE = ("not a valid duckdb", "corrupt", "checksum", "invalid", "magic", "unable to open", "io error")


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


def duckdb_memory_limit() -> str:
    """How much memory DuckDB may keep per connection ($BENCH_DUCKDB_MEMORY_LIMIT, default 512MB;
    beyond it DuckDB spills to disk). Its own default is 80 % of the machine: checkpointing a
    large warehouse on close then held far more than it needs, in every process."""
    return os.environ.get("BENCH_DUCKDB_MEMORY_LIMIT", "").strip() or "512MB"


def archive_copy_memory_limit() -> str:
    """How much memory DuckDB may keep while a partition's archive is copied into the warehouse
    ($BENCH_DUCKDB_COPY_MEMORY_LIMIT, default 128MB; a copy that does not fit is done again with
    the connection's limit). The copy checks each attempt against the table's key and journals the
    partition, and DuckDB fills its buffer pool doing so: with the connection's 512MB the fetch
    stage's peak grew with every vendor fetched before it, and the lower cap takes no longer
    (`benchmarks/fetch_copy_memory.py`; figures in benchmarks/README.md)."""
    return os.environ.get("BENCH_DUCKDB_COPY_MEMORY_LIMIT", "").strip() or "128MB"


def _where(where: dict[str, Any]) -> tuple[str, list[Any]]:
    return " AND ".join(f"{k} = ?" for k in where), list(where.values())


class _Sessions(threading.local):
    """The connection a thread holds for a warehouse file (`Warehouse.session`), by path: every
    Warehouse object of that file in the thread uses it (a second one would wait on the lock the
    thread already holds)."""

    def __init__(self) -> None:
        self.by_path: dict[str, duckdb.DuckDBPyConnection] = {}


_SESSIONS = _Sessions()
# In a forked child: the files whose session the parent held when it forked. The parent holds their
# lock until the session ends, so a connection here would wait for the parent, which may be waiting
# for this child: refused at once instead (`Warehouse.session` says not to fork inside one).
_HELD_BY_PARENT: set[str] = set()


def committed_seq(con: duckdb.DuckDBPyConnection) -> int:
    """The number of the last custody-journal entry this warehouse committed (0: none)."""
    row = con.execute(f"SELECT max(last_seq) FROM {POSITION_TABLE}").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


class Warehouse:
    """Access to the central DuckDB file and the per-partition archive files."""

    def __init__(
        self,
        path: str | Path,
        lock_timeout: float = 600.0,
        lake_url: str | None = None,
        connector: Connector = direct_connection,
        journal_url: str | None = None,
        shared_url: str | None = None,
        lock_url: str | None = None,
        pacing_url: str | None = None,
    ):
        self.path = Path(path)
        self.lock = FileLock(str(self.path) + ".lock", timeout=lock_timeout)
        self.partitions_dir = self.path.parent / "partitions"
        # Each vendor's account-wide request log, shared by every run that calls it (fetch.pacing):
        # a directory beside the warehouse (one machine), or a Redis URL (every machine).
        self.pacing_dir = self.path.parent / "pacing"
        self.pacing_url = pacing_url or None
        self.connector = connector
        # The Parquet data path: fan-out tables as objects under `lake_url` (None: all in the file).
        self.lake = ParquetLake(lake_url) if lake_url else None
        # The central file's home in object storage, machines taking turns through Postgres
        # (None: this file is the warehouse).
        self.shared = SharedWarehouse(shared_url, lock_url or "", self.path) if shared_url else None
        # The durable copy of every change to the central file (`storage.journal`).
        default_journal = f"{shared_url.rstrip('/')}/journal" if shared_url else journal_url_beside(self.path)
        self.journal = CustodyJournal(journal_url or default_journal)
        self._pending_seq: int | None = None
        self._position_writes = 0  # custody-journal positions this object wrote (`_journal`)
        reopen_in_children(self)

    def reopen_in_child(self) -> None:
        """In a forked child (`runtime.reopen_in_children`): the same files, with a file lock of its
        own (a lock object must not cross a fork) and its object stores' filesystems opened again
        (fsspec's async ones, S3's, refuse a fork); the shared warehouse opens its own connection."""
        self.lock = FileLock(str(self.path) + ".lock", timeout=self.lock.timeout)
        self.lake = ParquetLake(self.lake.url) if self.lake is not None else None
        if self.shared is not None:
            self.shared.reopen_in_child()
        self.journal = CustodyJournal(self.journal.url)
        _HELD_BY_PARENT.update(_SESSIONS.by_path)  # a connection held by the parent is not this process's
        _SESSIONS.by_path.clear()

    @property
    def pacing_store(self) -> Path | str:
        """Where each vendor's account-wide request log lives: the Redis URL, or the local directory."""
        return self.pacing_url or self.pacing_dir

    @property
    def where(self) -> str:
        """The warehouse as an operator would name it."""
        return f"{self.shared.url} (this machine's copy: {self.path})" if self.shared else str(self.path)

    # ------------------------------------------------------------------ connections

    @contextmanager
    def _turn(self) -> Iterator[bool]:
        """Exclusive access to the file: the cross-process lock and, with a shared warehouse, the
        machines' turn (the local copy brought up to date, uploaded if changed). Yields whether
        the warehouse exists (False: it would be created now). Inside a `session` of this thread,
        the session holds all of that already."""
        if self._held() is not None:
            yield True
            return
        if str(self.path) in _HELD_BY_PARENT:
            raise RuntimeError(
                f"the warehouse {self.path} is held by a session of the process that forked this one: "
                "a session must not be held around forked work (it would wait for the session to end)"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.lock:
            if self.shared is None:
                yield self.path.exists()
                self._settle_journal()  # committed to the file: the journal entry is final
                return
            # committed once the generation is recorded: only then is the journal entry final
            with self.shared.turn(after=self._settle_journal) as exists:
                yield exists

    def _refuse_if_lost(self, exists: bool, archives_too: bool = False) -> None:
        """A warehouse about to be created empty although the custody journal says one held data:
        refuse, naming what is missing and how to restore it. (The first golden stage of a new home
        creates the warehouse; a home given only partition archives, moved from elsewhere, may
        start one. A command that expects data, `archives_too`, counts the archives as well.)"""
        if exists:
            return
        evidence = []
        if self.journal.has_records():
            evidence.append(f"the custody journal {self.journal.url} ({self.journal.head()} changes)")
        archives = sorted(self.partitions_dir.glob("*/*.duckdb")) if self.partitions_dir.exists() else []
        if archives and (archives_too or evidence):
            snapshots = sorted({p.parent.name for p in archives})
            evidence.append(
                f"{len(archives)} partition archives under {self.partitions_dir} (snapshots: {', '.join(snapshots)})"
            )
        if evidence:
            raise WarehouseLostError(
                f"the warehouse {self.where} is missing, but {' and '.join(evidence)} say it held data. "
                "It was not re-created empty. Restore it: `bench warehouse restore` rebuilds every table from the "
                "custody journal and the partition archives (or the lake); nothing is fetched again.",
                {"warehouse": self.where, "journal": self.journal.url},
            )

    def _unreadable(self, exc: Exception) -> WarehouseLostError:
        return WarehouseLostError(
            f"the warehouse {self.where} cannot be read as a DuckDB database ({exc}). Restore it: "
            "`bench warehouse restore` moves the unreadable file aside and rebuilds every table from the "
            "custody journal and the partition archives (or the lake).",
            {"warehouse": self.where},
        )

    def damaged_error(self, exc: Exception) -> WarehouseLostError:
        return WarehouseLostError(
            f"the warehouse {self.where} is damaged: a part of the file does not read back as written ({exc}). "
            "Restore it: `bench warehouse restore` moves the damaged file aside and rebuilds every table from the "
            "custody journal and the partition archives (or the lake).",
            {"warehouse": self.where},
        )

    @contextmanager
    def _open(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The connector's connection; a file DuckDB cannot read is reported as such."""
        with ExitStack() as stack:
            try:
                con = stack.enter_context(self.connector(str(self.path)))
            except duckdb.Error as exc:
                text = str(exc).lower()
                if "lock" not in text and any(word in text for word in _UNREADABLE):
                    raise self._unreadable(exc) from exc
                raise
            con.execute(f"SET memory_limit = '{duckdb_memory_limit()}'")
            yield con

    def _refuse_if_behind(self, position: int, head: int) -> None:
        if head and position < head:
            raise WarehouseLostError(
                f"the warehouse {self.where} is behind its custody journal: it records changes up to "
                f"#{position}, the journal {self.journal.url} up to #{head}. It was replaced or rolled "
                "back (an empty file, a copy, an old backup). Move it aside and restore: `bench warehouse restore`.",
                {"warehouse": self.where, "journal": self.journal.url},
            )

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived read-write connection held under the cross-process lock (and, with a
        shared warehouse, the machines' turn); inside a `session` of this thread, its connection."""
        held = self._held()
        if held is not None:
            with self._damage_reported():
                yield held
            return
        with self._turn() as exists:
            self._refuse_if_lost(exists)
            checked = CHECKED.still(self.path)  # the file as this process last left it, checks made
            writes_before = self._position_writes
            with self._open() as con, self._damage_reported():
                try:
                    position = self._check(con, checked.position if checked else None, schema=checked is None)
                    if self.lake is not None:
                        self.lake.attach(con)
                    yield con
                    if self.shared is not None:
                        con.execute("CHECKPOINT")  # the file is uploaded whole: nothing left in a write-ahead log
                finally:
                    con.close()  # also when the connector would leave it open on an error
            # still under the lock, the connection closed: the file as the next connection finds it
            CHECKED.remember(self.path, position if self._position_writes == writes_before else None)

    @contextmanager
    def _damage_reported(self) -> Iterator[None]:
        try:
            yield
        except duckdb.Error as exc:
            # a block of the file that fails its checksum when read: the warehouse is damaged
            if is_damage(exc):
                raise self.damaged_error(exc) from exc
            raise

    def _check(self, con: duckdb.DuckDBPyConnection, position: int | None, schema: bool) -> int:
        """What a connection checks before it is used: the schema (only for a file this process
        has not seen in its present state), the journal's guarantees (every time: the journal
        lives outside the file). Returns the journal entry the file committed."""
        if schema:
            ensure_schema(con)
        head = self.journal.head()
        if position is None or (head and position < head):
            position = committed_seq(con)  # not known, or seemingly behind: read, never assumed
        self._refuse_if_behind(position, head)
        if not head:
            self._journal_if_never_journaled(con)
            position = committed_seq(con)
        return position

    def _held(self) -> duckdb.DuckDBPyConnection | None:
        return _SESSIONS.by_path.get(str(self.path))

    @contextmanager
    def session(self) -> Iterator[None]:
        """One connection, and one turn of the lock, for a stretch of reads and short writes: every
        `connect`, `query_df`, `rows`, `transaction` and `reading` of this warehouse file in this
        thread uses it until the block ends (re-entrant: an inner session is the outer one). A query
        then costs a query, not a database opened and checked. Hold it only around work on the
        warehouse: never around a vendor's HTTP calls, slow computation or forked workers, which
        would wait on, or keep others waiting on, the file. With a shared warehouse it holds
        nothing (each connection is the machines' turn, and its generation is recorded per write)."""
        if self.shared is not None or self._held() is not None:
            yield
            return
        with self.connect() as con:
            _SESSIONS.by_path[str(self.path)] = con
            try:
                yield
            finally:
                del _SESSIONS.by_path[str(self.path)]

    def _journal_if_never_journaled(self, con: duckdb.DuckDBPyConnection) -> None:
        """A warehouse written before the journal existed (or whose journal was lost) gets one
        whole copy of every journaled table as its first entry, so a restore misses nothing
        (called when the journal has no entry)."""
        tables = [t for t in TABLES if journaled(t, self.lake_tables())]
        held = con.execute("SELECT " + " + ".join(f"(SELECT count(*) FROM main.{t})" for t in tables)).fetchone()
        if not held or not held[0]:
            return
        con.execute("BEGIN TRANSACTION")
        try:
            self._journal(con, [(t, {}) for t in tables])
        except BaseException:
            con.execute("ROLLBACK")
            self._pending_seq = None
            self.journal.drop_pending()
            raise
        con.execute("COMMIT")

    def _settle_journal(self) -> None:
        """After the durable commit (the file's, or the shared generation's record), the pending
        entry joins the journal."""
        if self._pending_seq is not None:
            seq, self._pending_seq = self._pending_seq, None
            self.journal.finalize(seq)

    @contextmanager
    def transaction(self, changes: Sequence[Change] = ()) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection inside one transaction: committed when the block ends, rolled
        back if it raises. `changes` name what the block writes (a table, and the rows `where`
        matches); the rows they leave are copied into the custody journal with the commit. A
        write to the central file that names no change would be lost by a restore."""
        logged = [(t, w) for t, w in changes if journaled(t, self.lake_tables())]
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                if logged:
                    self._journal(con, logged)
            except BaseException:
                con.execute("ROLLBACK")
                if self._pending_seq is not None:
                    self._pending_seq = None
                    self.journal.drop_pending()
                raise
            con.execute("COMMIT")
            if con is self._held():
                self._settle_journal()  # committed to the file; the session's turn has not ended yet

    def _journal(self, con: duckdb.DuckDBPyConnection, changes: Sequence[Change]) -> None:
        position = committed_seq(con)
        self.journal.settle_pending(position)  # left by a write interrupted before this one
        seq = max(position, self.journal.head()) + 1
        con.execute(f"DELETE FROM {POSITION_TABLE}")
        con.execute(f"INSERT INTO {POSITION_TABLE} VALUES (?)", [seq])
        self._position_writes += 1
        self.journal.write_pending(con, seq, changes)
        self._pending_seq = seq

    @contextmanager
    def reading(self) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """A read-only connection under the lock, or None when the file does not exist yet. For
        schedules and sensors, which must never create or migrate the warehouse (DuckDBResource
        always opens read-write, so this one opens the file itself). Inside a `session`, its connection.
        """
        held = self._held()
        if held is not None:
            with self._damage_reported():
                yield held
            return
        if self.shared is None and not self.path.exists():
            yield None  # nothing to read, and a read leaves no lock file or folder behind
            return
        with self._turn() as exists:
            if not exists:
                yield None
                return
            try:
                con = duckdb.connect(str(self.path), read_only=True)
            except duckdb.Error as exc:
                text = str(exc).lower()
                if "lock" not in text and any(word in text for word in _UNREADABLE):
                    raise self._unreadable(exc) from exc
                raise
            try:
                yield con
            except duckdb.Error as exc:
                if is_damage(exc):
                    raise self.damaged_error(exc) from exc
                raise
            finally:
                con.close()

    def exists(self, archives_too: bool = False) -> bool:
        """Whether there is a warehouse (a missing one that held data raises WarehouseLostError)."""
        with self._turn() as exists:
            self._refuse_if_lost(exists, archives_too)
            return exists

    def require(self, what: str) -> None:
        """Refuse a command that reads recorded data when there is no warehouse at all."""
        if not self.exists(archives_too=True):
            raise WarehouseLostError(
                f"{what}: there is no warehouse at {self.where}: nothing was materialized with this home and "
                "configuration ($BENCH_HOME, $BENCH_WAREHOUSE, $BENCH_WAREHOUSE_URL), and no custody journal or "
                "partition archive says otherwise. Run the snapshot first, or point these at the warehouse that ran it.",
                {"warehouse": self.where},
            )

    @contextmanager
    def partition_lease(self, snapshot_id: str, vendor: str) -> Iterator[None]:
        """One fetch of a partition at a time, whichever machine runs it: a second delivery of the
        same step waits, then finds everything archived."""
        if self.shared is not None:
            with self.shared.lease(f"fetch:{snapshot_id}|{vendor}"):
                yield
            return
        path = self.partitions_dir / snapshot_id / f"{vendor}.lease"
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path)):
            yield

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

    def public_body_chars(self, snapshot_id: str) -> dict[str, int]:
        """Characters of archived public response bodies per vendor: the work of re-reading a
        vendor's part (its bodies are parsed, scored and scanned for the holdout), as an estimate
        for putting the heaviest first (`publish.workers.in_processes`)."""
        sizes = self.query_df(
            "SELECT vendor, sum(strlen(body)) AS chars FROM raw_responses "
            "WHERE snapshot_id = ? AND role = 'public' GROUP BY vendor",
            [snapshot_id],
        )
        return {str(v): int(c) for v, c in zip(sizes["vendor"], sizes["chars"].fillna(0))}

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
        with self.transaction(changes=[(table, where)]) as con:
            self._refuse_if_frozen(con, table, where)
            con.execute(f"DELETE FROM {table} WHERE {clause}", params)
            insert_frame(con, table, df)
        return len(df)

    def seed_partition_archive(self, snapshot_id: str, vendor: str, con: duckdb.DuckDBPyConnection) -> int:
        """Copy into a partition's archive (`con`, its open connection) every attempt of the
        partition the warehouse holds and the archive lacks; returns how many. An archive lost or
        cleared after its attempts reached the warehouse is so brought back before anything is
        sent: the warehouse is a source to resume from, nothing answered is paid for again, and
        the evidence the warehouse holds is the evidence kept (a new attempt is numbered after
        it). With the lake, the lake is that source (`partition_file`) and this copies nothing."""
        if self.lake is not None or self.shared is not None or not self.path.exists():
            return 0
        table = TABLES["raw_responses"]
        cols = ", ".join(table.column_names)
        same = " AND ".join(f"a.{k} = w.{k}" for k in table.key)
        path = str(self.path).replace("'", "''")
        with self.lock:  # every writer of the file holds it: the file is read as last committed
            try:
                con.execute(f"ATTACH '{path}' AS warehouse_copy (READ_ONLY)")
            except duckdb.Error as exc:
                if is_damage(exc):
                    raise self._unreadable(exc) from exc
                raise
            try:
                held = con.execute(
                    "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'warehouse_copy' "
                    "AND schema_name = 'main' AND table_name = 'raw_responses'"
                ).fetchone()
                if not held or not held[0]:
                    return 0
                before = con.execute("SELECT count(*) FROM main.raw_responses").fetchone()
                try:
                    con.execute(
                        f"INSERT INTO main.raw_responses ({cols}) SELECT {cols} FROM warehouse_copy.raw_responses w "
                        f"WHERE w.snapshot_id = ? AND w.vendor = ? AND NOT EXISTS "
                        f"(SELECT 1 FROM main.raw_responses a WHERE {same})",
                        [snapshot_id, vendor],
                    )
                except duckdb.Error as exc:
                    if is_damage(exc):
                        raise self.damaged_error(exc) from exc
                    raise
                after = con.execute("SELECT count(*) FROM main.raw_responses").fetchone()
                return int(after[0] if after else 0) - int(before[0] if before else 0)
            finally:
                con.execute("DETACH warehouse_copy")

    def load_partition_archive(self, snapshot_id: str, vendor: str, archive: Path) -> int:
        """Make the partition's `raw_responses` rows equal to its archive's (`storage.archive`), as
        `replace_rows` would, without a copy in Python: the archive file is attached and DuckDB
        copies across only the attempts the warehouse lacks (and drops any it holds that the archive
        does not: none, as an archive only grows). A re-run that sent nothing writes nothing, and a
        fetch adds its new attempts only, so the central file is not rewritten (a checkpoint of
        rewritten bodies took memory that grew with the warehouse). Returns the partition's rows."""
        where = {"snapshot_id": snapshot_id, "vendor": vendor}
        if self.lake is not None:
            with self.open_file(archive) as con:
                frame = con.execute(
                    "SELECT * FROM raw_responses WHERE snapshot_id = ? AND vendor = ?", [snapshot_id, vendor]
                ).df()
            return self._replace_lake_partition("raw_responses", frame, where)
        try:
            return self._copy_partition_archive(snapshot_id, vendor, archive, archive_copy_memory_limit())
        except duckdb.OutOfMemoryException:
            # a warehouse whose key no longer fits the copy's limit: copied with the connection's own
            # (the transaction was rolled back; the archive holds every attempt, nothing is sent again)
            return self._copy_partition_archive(snapshot_id, vendor, archive, duckdb_memory_limit())

    def _copy_partition_archive(self, snapshot_id: str, vendor: str, archive: Path, memory_limit: str) -> int:
        where = {"snapshot_id": snapshot_id, "vendor": vendor}
        table = TABLES["raw_responses"]
        # the same attempt: its key, when it started and what came back
        same = " AND ".join(
            [
                *(f"a.{k} = m.{k}" for k in table.key),
                "a.started_at = m.started_at",
                "a.body_sha256 IS NOT DISTINCT FROM m.body_sha256",
            ]
        )
        cols = ", ".join(table.column_names)
        path = str(archive).replace("'", "''")
        with self.transaction(changes=[("raw_responses", where)]) as con:
            self._refuse_if_frozen(con, "raw_responses", where)
            con.execute(f"SET memory_limit = '{memory_limit}'")  # the connection closes after
            con.execute(f"ATTACH '{path}' AS partition_archive (READ_ONLY)")  # detached when the connection closes
            con.execute(
                "DELETE FROM main.raw_responses m WHERE m.snapshot_id = ? AND m.vendor = ? AND NOT EXISTS "
                f"(SELECT 1 FROM partition_archive.raw_responses a WHERE {same})",
                [snapshot_id, vendor],
            )
            con.execute(
                f"INSERT INTO main.raw_responses ({cols}) SELECT {cols} FROM partition_archive.raw_responses a "
                f"WHERE a.snapshot_id = ? AND a.vendor = ? AND NOT EXISTS (SELECT 1 FROM main.raw_responses m WHERE {same})",
                [snapshot_id, vendor],
            )
            row = con.execute(
                "SELECT count(*) FROM main.raw_responses WHERE snapshot_id = ? AND vendor = ?", [snapshot_id, vendor]
            ).fetchone()
        return int(row[0]) if row else 0

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
        """The partition's local raw-response archive. With a lake, it is first brought up to what
        the lake holds (the partition's object and the segments of an interrupted fetch), so a
        re-run on another machine pays nothing twice."""
        path = self.partitions_dir / snapshot_id / f"{vendor}.duckdb"
        if self.lake is not None:
            # also when this machine has an archive: another may have fetched more since
            self.lake.restore_archive(path, snapshot_id, vendor)
        return path

    def lake_tables(self) -> tuple[str, ...]:
        """The tables stored outside the central file (none without a lake)."""
        return LAKE_TABLES if self.lake is not None else ()
