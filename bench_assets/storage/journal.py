"""The custody journal: a durable copy of every change to the warehouse, written with the change.

The central warehouse file holds the custody records (golden rows, split, verification, lifecycle,
review packets, errata, publications, dead rows, …). Raw responses have their own durable copy
(the partition archives, or the lake); everything else gets this journal, so a lost or corrupt
warehouse can be rebuilt (`bench warehouse restore`) instead of being replaced by an empty one.

Every write names what it changes (a table and the rows `where` it matches: `replace_rows` does,
and so do the few transactions that run their own SQL). Inside the write's transaction, the rows
those changes leave are copied into one entry: a zip of one Parquet file per change (typed by
DuckDB itself, so a restore gives back the same values, NULLs and NaNs alike) and `entry.json`
naming each change's table and `where`. Restoring is replaying the entries in order: delete what
`where` matches, insert the rows.

Entries are numbered, and the warehouse records the number of the last one it committed
(`bench_journal_position`), in the same transaction. The entry is written as `pending.zip` before
the commit and renamed to `entries/<number>.zip` after it, under the warehouse's lock. A crash in
between leaves `pending.zip`; the next write finalizes it if the warehouse committed that number,
or writes over it if it did not. `HEAD` holds the last finalized number: a warehouse that is
behind it was replaced or rolled back, and is refused (`Warehouse.connect`).

The journal lives on any fsspec filesystem: a directory beside the warehouse by default, another
disk or a bucket with `$BENCH_JOURNAL_URL`.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import duckdb
import fsspec
from fsspec.implementations.local import LocalFileSystem

from bench_assets.storage.tables import TABLES

# The table whose durable copy is elsewhere: the partition archives (`storage.archive`), durable
# per response, or the lake's objects.
ARCHIVED_ELSEWHERE = frozenset({"raw_responses"})
POSITION_TABLE = "bench_journal_position"
POSITION_DDL = f"CREATE TABLE IF NOT EXISTS {POSITION_TABLE} (last_seq BIGINT)"
FORMAT = 1

# How reading a zip entry cut short fails (no central directory, no entry.json, half a JSON text).
_CUT_SHORT = (zipfile.BadZipFile, KeyError, ValueError, EOFError)

Where = Mapping[str, Any]  # column -> value, or a list of values (IN)
Change = tuple[str, Where]


def where_sql(table: str, where: Where) -> tuple[str, list[Any]]:
    """` WHERE …` (empty for the whole table) and its parameters, each cast to its column's type."""
    types = {c.name: c.type for c in TABLES[table].columns}
    clauses, params = [], []
    for column, value in where.items():
        if column not in types:
            raise ValueError(f"{table} has no column {column!r}")
        if isinstance(value, list | tuple | set | frozenset):
            values = list(value)
            if not values:
                clauses.append("FALSE")
                continue
            marks = ", ".join(f"CAST(? AS {types[column]})" for _ in values)
            clauses.append(f"{column} IN ({marks})")
            params.extend(values)
        else:
            clauses.append(f"{column} = CAST(? AS {types[column]})")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _plain(value: Any) -> Any:
    """A `where` value as JSON keeps it (datetimes and dates as ISO text; DuckDB casts them back)."""
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if hasattr(value, "isoformat"):  # pandas Timestamp
        return value.isoformat()
    return value


def journaled(table: str, lake_tables: Sequence[str] = ()) -> bool:
    """Whether writes to `table` are journaled (not when its durable copy is elsewhere)."""
    return table in TABLES and table not in ARCHIVED_ELSEWHERE and table not in lake_tables


@dataclass(frozen=True)
class EntryInfo:
    seq: int
    written_at: str
    changes: list[dict[str, Any]]  # {table, where, rows}

    def summary(self) -> str:
        parts = [f"{c['table']} ({c['rows']} rows)" for c in self.changes]
        return f"#{self.seq} at {self.written_at}: {', '.join(parts)}"


class CustodyJournal:
    """The journal under one fsspec URL (a local directory, s3://bucket/prefix, …)."""

    def __init__(self, url: str):
        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url, use_listings_cache=False)
        self.root = root.rstrip("/")
        self.local = isinstance(self.fs, LocalFileSystem)

    def __repr__(self) -> str:
        return f"CustodyJournal({self.url!r})"

    # ------------------------------------------------------------------ layout

    @property
    def pending_path(self) -> str:
        return f"{self.root}/pending.zip"

    @property
    def head_path(self) -> str:
        return f"{self.root}/HEAD"

    def entry_path(self, seq: int) -> str:
        return f"{self.root}/entries/{seq:012d}.zip"

    def head(self) -> int:
        """The number of the last finalized entry (0: none)."""
        try:
            with self.fs.open(self.head_path, "rb") as f:
                return int(f.read().decode().strip() or 0)
        except FileNotFoundError:
            return 0

    def entries(self) -> list[int]:
        """The numbers of every finalized entry, in order."""
        try:
            names = self.fs.ls(f"{self.root}/entries", detail=False)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            stem = str(name).rsplit("/", 1)[-1]
            if stem.endswith(".zip") and stem[:-4].isdigit():
                out.append(int(stem[:-4]))
        return sorted(out)

    def has_records(self) -> bool:
        """Whether anything was ever journaled here."""
        return self.head() > 0 or self.fs.exists(self.pending_path) or bool(self.entries())

    # ------------------------------------------------------------------ writing (under the warehouse lock)

    def write_pending(self, con: duckdb.DuckDBPyConnection, seq: int, changes: Sequence[Change]) -> None:
        """Copy the rows each change leaves (read on `con`, inside the write's transaction) into
        the pending entry `seq`."""
        with tempfile.TemporaryDirectory(prefix="bench-journal-") as scratch:
            described = []
            zipped = Path(scratch) / "entry.zip"
            with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_STORED) as bundle:
                for i, (table, given) in enumerate(changes):
                    where = {k: _plain(v) for k, v in given.items()}  # as replayed: ISO text for times
                    clause, params = where_sql(table, where)
                    name = f"{i:03d}-{table}.parquet"
                    local = str(Path(scratch) / name).replace("'", "''")
                    columns = ", ".join(TABLES[table].column_names)
                    con.execute(
                        f"COPY (SELECT {columns} FROM main.{table}{clause}) TO '{local}' (FORMAT parquet)", params
                    )
                    rows = con.execute(f"SELECT count(*) FROM main.{table}{clause}", params).fetchone()
                    bundle.write(Path(scratch) / name, name)
                    described.append(
                        {
                            "table": table,
                            "where": where,
                            "file": name,
                            "rows": int(rows[0]) if rows else 0,
                        }
                    )
                header = {
                    "format": FORMAT,
                    "seq": seq,
                    "written_at": datetime.now(UTC).isoformat(),
                    "changes": described,
                }
                bundle.writestr("entry.json", json.dumps(header, indent=1))
            self.fs.makedirs(self.root, exist_ok=True)
            self.fs.put_file(str(zipped), self.pending_path)

    def pending(self) -> EntryInfo | None:
        """The pending entry, or None: none, or one cut short while it was written (a full disk, a
        kill). Such an entry belongs to a write that never committed: the warehouse commits only
        after its entry is written whole."""
        try:
            return self.read_info(self.pending_path)
        except (FileNotFoundError, *_CUT_SHORT):
            return None

    def settle_pending(self, committed_seq: int) -> None:
        """Finalize the pending entry if the warehouse committed it (its number is at most
        `committed_seq`), else drop it: it belongs to a write that never committed (so does one
        cut short while it was written)."""
        try:
            info = self.read_info(self.pending_path)
        except FileNotFoundError:
            return
        except _CUT_SHORT:
            self.fs.rm(self.pending_path)
            return
        if info.seq <= committed_seq:
            self.finalize(info.seq)
        else:
            self.fs.rm(self.pending_path)

    def finalize(self, seq: int) -> None:
        """The pending entry becomes `entries/<seq>.zip`, and HEAD says so."""
        self.fs.makedirs(f"{self.root}/entries", exist_ok=True)
        if self.fs.exists(self.pending_path):
            self.fs.mv(self.pending_path, self.entry_path(seq))
        if seq > self.head():
            temporary = f"{self.head_path}.{seq}.tmp"
            with self.fs.open(temporary, "wb") as f:
                f.write(f"{seq}\n".encode())
            self.fs.mv(temporary, self.head_path)  # a reader sees the old number or the new one

    def drop_pending(self) -> None:
        if self.fs.exists(self.pending_path):
            self.fs.rm(self.pending_path)

    # ------------------------------------------------------------------ reading and replaying

    def read_info(self, path: str) -> EntryInfo:
        with self.fs.open(path, "rb") as f, zipfile.ZipFile(f) as bundle:
            header = json.loads(bundle.read("entry.json"))
        return EntryInfo(header["seq"], header["written_at"], header["changes"])

    def info(self, seq: int) -> EntryInfo:
        return self.read_info(self.entry_path(seq))

    def replay(self, con: duckdb.DuckDBPyConnection, seqs: Sequence[int] | None = None) -> Iterator[EntryInfo]:
        """Apply the entries (all finalized ones by default) in order on `con`: for each change,
        delete what its `where` matches and insert the rows it recorded. Yields each entry applied."""
        with tempfile.TemporaryDirectory(prefix="bench-journal-") as scratch:
            for seq in self.entries() if seqs is None else seqs:
                local = Path(scratch) / f"{seq}.zip"
                self.fs.get_file(self.entry_path(seq), str(local))
                with zipfile.ZipFile(local) as bundle:
                    header = json.loads(bundle.read("entry.json"))
                    bundle.extractall(Path(scratch) / str(seq))
                for change in header["changes"]:
                    table = change["table"]
                    clause, params = where_sql(table, change["where"])
                    parquet = str(Path(scratch) / str(seq) / change["file"]).replace("'", "''")
                    columns = ", ".join(TABLES[table].column_names)
                    con.execute(f"DELETE FROM main.{table}{clause}", params)
                    con.execute(f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM read_parquet('{parquet}')")
                local.unlink()
                yield EntryInfo(header["seq"], header["written_at"], header["changes"])


def journal_url_beside(warehouse_path: Path) -> str:
    """The default journal: `journal/` beside the warehouse file."""
    return str(warehouse_path.parent / "journal")
