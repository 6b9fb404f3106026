"""What a failed write or a damaged disk leaves where a DuckDB file belongs, told apart.

- Unwritten: a DuckDB file begins with three 4 KiB headers (the file's own and two database
  headers, written when the file is created). A file shorter than that was cut short while being
  created (a full disk leaves 0 or 4,096 bytes) and never held a committed row: DuckDB refuses
  to open it, and every later run would meet it. It is removed.
- Unreadable: DuckDB cannot open the file (not a DuckDB file, headers damaged).
- Corrupt: it opens, but a block does not match its checksum (noise written mid-file): found
  only when that block is read (`damage_in`, which reads every column of every table).

A file that may hold evidence is never deleted: it is moved aside as `<name>.<why>-<time>`, its
write-ahead log with it, where a person can still read what is left of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import duckdb

DUCKDB_HEADERS_BYTES = 3 * 4096
# How DuckDB says a file cannot be read as a database, or a block of it is damaged. (Not a lock
# held by another process, nor a full disk on a write: those are no damage to the file.)
_DAMAGE = (
    "not a valid duckdb database file",
    "could not read enough bytes",
    "corrupt database file",
    "checksum",
    "invalid database header",
)


def is_damage(exc: BaseException) -> bool:
    """Whether a DuckDB error says the file (or a block of it) is damaged."""
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and any(marker in text for marker in _DAMAGE)


def wal_of(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def is_unwritten(path: Path) -> bool:
    """A file shorter than DuckDB's headers, whose write-ahead log (if any) is empty: it was never
    completely created, so it holds nothing."""
    wal = wal_of(path)
    return (
        path.is_file() and path.stat().st_size < DUCKDB_HEADERS_BYTES and (not wal.exists() or wal.stat().st_size == 0)
    )


def is_foreign(path: Path) -> bool:
    """A file that is not a DuckDB database at all: DuckDB's main header starts with a checksum
    and its magic bytes `DUCK` (an empty or missing file is not foreign: DuckDB creates one)."""
    try:
        with path.open("rb") as f:
            head = f.read(12)
    except FileNotFoundError:
        return False
    return len(head) > 0 and head[8:12] != b"DUCK"


def unreadable_reason(path: Path) -> str | None:
    """Why DuckDB cannot open the file, or None when it can (or when it is busy: a lock held by
    another process, or a connection of this one, says nothing about the file)."""
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        return str(exc) if is_damage(exc) else None
    con.close()
    return None


def move_aside(path: Path, why: str, now: datetime | None = None) -> Path | None:
    """Move the file and its write-ahead log to `<name>.<why>-<time>`; the file's new path."""
    when = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    moved = None
    for name in (path, wal_of(path)):
        if name.exists():
            aside = name.with_name(f"{name.name}.{why}-{when}")
            os.replace(name, aside)
            moved = moved or aside
    return moved


def clear_unusable(path: Path, now: datetime | None = None) -> str | None:
    """Clear what would stop the DuckDB file at `path` from being opened, so it blocks no later
    run: an unwritten file is removed, an unreadable one moved aside. Returns what was done, in a
    sentence for the run's log, or None when the file is missing or opens."""
    if not path.exists():
        return None
    if is_unwritten(path):
        size = path.stat().st_size
        path.unlink()
        wal_of(path).unlink(missing_ok=True)
        return (
            f"{path} held {size} bytes, fewer than a DuckDB file's headers: a write that failed (a full disk) "
            "left it, and it never held a row; it was removed"
        )
    reason = unreadable_reason(path)
    if reason is None:
        return None
    aside = move_aside(path, "unreadable", now)
    return f"{path} could not be opened ({reason}); it was moved aside to {aside} (kept) and a new one started"


def damage_in(con: duckdb.DuckDBPyConnection, tables: Iterable[str], database: str = "main") -> str | None:
    """Read every column of every row of `tables` (in `database` on `con`) and say where a block
    failed its checksum, or None when all of them read. Opening a file reads its headers only; a
    damaged block is found when it is read."""
    for table in tables:
        try:
            con.execute(f"SELECT count(*), bit_xor(hash(COLUMNS(*))) FROM {database}.{table}").fetchall()
        except duckdb.Error as exc:
            if is_damage(exc):
                return f"table {table}: {exc}"
            raise
    return None
