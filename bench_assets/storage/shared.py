"""The central warehouse shared by machines that share no filesystem: object storage plus Postgres.

DuckDB lets one process write a database file, and a file lock only holds on one machine (or on a
network volume whose locks hold, which object stores and many volumes do not give). So with
`$BENCH_WAREHOUSE_URL` set, the central file's durable home is object storage, one immutable
object per version:

    <url>/generations/<generation>.duckdb

and Postgres (`$BENCH_LOCK_URL`) serializes the machines and records which generation is current
(table `bench_warehouse_generations`: url, generation, sha256, bytes). Every connection takes its
turn under a Postgres advisory lock (released by the server when a holder dies, so a killed
worker never leaves it held), brings the machine's local copy up to the current generation
(downloaded only when it changed, its SHA-256 checked against the record), works on that copy
with DuckDB, and, if the copy changed, uploads it as the next generation and records it before
the turn ends. A crash before the record leaves at most an unreferenced object; readers never
see half a version. The last few generations are kept as point-in-time copies.

Each machine's copy (`BENCH_WAREHOUSE`, default `data/warehouse/bench.duckdb` under its home) is a
cache, never the truth. The small snapshot-level tables live here; the fan-out tables are the
lake's Parquet objects (`storage.lake`), which every machine reads directly.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import fsspec
import psycopg2

from bench_assets.errors import WarehouseLostError

KEEP_GENERATIONS = 3
RECORD_DDL = (
    "CREATE TABLE IF NOT EXISTS bench_warehouse_generations ("
    "url TEXT PRIMARY KEY, generation BIGINT NOT NULL, sha256 TEXT NOT NULL, bytes BIGINT NOT NULL, "
    "updated_at TIMESTAMPTZ NOT NULL DEFAULT now())"
)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def advisory_key(name: str) -> int:
    """A stable 63-bit key for pg_advisory_lock (the same in every process and machine)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") & 0x7FFFFFFFFFFFFFFF


@dataclass(frozen=True)
class Generation:
    number: int
    sha256: str
    bytes: int


class SharedWarehouse:
    """The warehouse file's home in object storage (`url`), its turns and versions in Postgres (`lock_url`)."""

    def __init__(self, url: str, lock_url: str, cache_path: Path):
        if not lock_url:
            raise WarehouseLostError(
                f"the shared warehouse {url} needs $BENCH_LOCK_URL (postgresql://user:password@host/db): "
                "machines take their turns and record each version there"
            )
        self.url = url.rstrip("/")
        self.lock_url = lock_url
        self.cache_path = cache_path
        self.fs, root = fsspec.core.url_to_fs(self.url, use_listings_cache=False)
        self.root = root.rstrip("/")
        self._key = advisory_key(f"bench-warehouse:{self.url}")
        self._pg: tuple[int, psycopg2.extensions.connection] | None = None
        self._synced: tuple[int, int, int] | None = None  # (generation, size, mtime_ns) of the local copy

    def __repr__(self) -> str:
        return f"SharedWarehouse({self.url!r})"

    def reopen_in_child(self) -> None:
        """In a forked child: its filesystem opened again (an async one, such as S3's, refuses to be
        used across a fork); the child opens its own Postgres connection (`_connection`)."""
        self.fs, _ = fsspec.core.url_to_fs(self.url, use_listings_cache=False)

    # ------------------------------------------------------------------ Postgres

    def _connection(self) -> psycopg2.extensions.connection:
        """This process's connection (a forked child opens its own)."""
        if self._pg is not None and self._pg[0] == os.getpid() and not self._pg[1].closed:
            return self._pg[1]
        con = psycopg2.connect(self.lock_url, connect_timeout=10)
        con.autocommit = True
        self._pg = (os.getpid(), con)
        return con

    def _record(self, cur) -> Generation | None:
        cur.execute("SELECT generation, sha256, bytes FROM bench_warehouse_generations WHERE url = %s", [self.url])
        row = cur.fetchone()
        return Generation(int(row[0]), row[1], int(row[2])) if row else None

    @contextmanager
    def lease(self, name: str) -> Iterator[None]:
        """An exclusive lease on `name` across machines (a Postgres advisory lock on its own
        connection, held while the block runs, released by the server if this process dies)."""
        con = psycopg2.connect(self.lock_url, connect_timeout=10)
        con.autocommit = True
        try:
            key = advisory_key(f"bench-lease:{self.url}:{name}")
            con.cursor().execute("SELECT pg_advisory_lock(%s)", [key])
            yield
        finally:
            con.close()

    # ------------------------------------------------------------------ objects

    def object_path(self, generation: int) -> str:
        return f"{self.root}/generations/{generation:012d}.duckdb"

    def generations(self) -> list[int]:
        try:
            names = self.fs.ls(f"{self.root}/generations", detail=False)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            stem = str(name).rsplit("/", 1)[-1]
            if stem.endswith(".duckdb") and stem[:-7].isdigit():
                found.append(int(stem[:-7]))
        return sorted(found)

    def _sidecar(self) -> Path:
        return self.cache_path.with_name(self.cache_path.name + ".generation.json")

    def _download(self, generation: Generation) -> None:
        path = self.object_path(generation.number)
        if not self.fs.exists(path):
            raise WarehouseLostError(
                f"the shared warehouse {self.url} is lost: its current version (generation {generation.number}, "
                f"recorded in {self._where_recorded()}) is missing from object storage "
                f"({self.fs.unstrip_protocol(path)}). Nothing was replaced by an empty warehouse. Restore it: "
                "`bench warehouse restore` rebuilds every table from the custody journal and the lake."
            )
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.cache_path.with_name(f".{self.cache_path.name}.{uuid.uuid4().hex}.download")
        try:
            self.fs.get_file(path, str(temporary))
            digest = file_sha256(temporary)
            if digest != generation.sha256:
                raise WarehouseLostError(
                    f"the shared warehouse {self.url} is corrupt: generation {generation.number} "
                    f"({self.fs.unstrip_protocol(path)}) has SHA-256 {digest}, its record says {generation.sha256}. "
                    "Restore it: `bench warehouse restore`."
                )
            wal = self.cache_path.with_name(self.cache_path.name + ".wal")
            if wal.exists():
                wal.unlink()
            os.replace(temporary, self.cache_path)
        finally:
            if temporary.exists():
                temporary.unlink()

    def _where_recorded(self) -> str:
        dsn = psycopg2.extensions.parse_dsn(self.lock_url)
        return f"Postgres {dsn.get('host', 'localhost')}/{dsn.get('dbname', '')} table bench_warehouse_generations"

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = self.cache_path.stat()
        except FileNotFoundError:
            return None
        return st.st_size, st.st_mtime_ns

    # ------------------------------------------------------------------ turns

    @contextmanager
    def turn(self, sync: bool = True, after: Callable[[], None] | None = None) -> Iterator[bool]:
        """This machine's turn with the warehouse: the local copy is the current generation while
        the block runs (yields False when no generation exists yet: the copy starts empty); a
        changed copy is uploaded as the next generation when it ends without an error.
        `sync=False` (a restore) leaves the local copy alone: whatever it holds at the end becomes
        the next generation. `after` runs once that generation is recorded, still in the turn."""
        cur = self._connection().cursor()
        cur.execute("SELECT pg_advisory_lock(%s)", [self._key])
        try:
            cur.execute(RECORD_DDL)
            current = self._record(cur) or (self._adopt(cur) if sync else None)
            if sync:
                self._sync(current)
            else:
                current = self._record(cur)
                self._synced = (current.number if current else 0, -1, -1)
            yield current is not None
            self._publish(cur, current, always=not sync)
            if after is not None:
                after()
        finally:
            cur.execute("SELECT pg_advisory_unlock(%s)", [self._key])

    def _adopt(self, cur) -> Generation | None:
        """No record (a new lock database): the newest generation in object storage, if any, is current."""
        found = self.generations()
        if not found:
            return None
        scratch = self.cache_path.with_name(f".{self.cache_path.name}.adopt")
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        self.fs.get_file(self.object_path(found[-1]), str(scratch))
        adopted = Generation(found[-1], file_sha256(scratch), scratch.stat().st_size)
        scratch.unlink()
        cur.execute(
            "INSERT INTO bench_warehouse_generations (url, generation, sha256, bytes) VALUES (%s, %s, %s, %s)",
            [self.url, adopted.number, adopted.sha256, adopted.bytes],
        )
        return adopted

    def _sync(self, current: Generation | None) -> None:
        stat = self._stat()
        if current is None:
            # Nothing shared yet: a leftover local copy is not the truth; start from an empty file.
            for stale in (self.cache_path, self.cache_path.with_name(self.cache_path.name + ".wal")):
                if stale.exists():
                    stale.unlink()
            self._synced = (0, -1, -1)
            return
        recorded = self._read_sidecar()
        if not (stat and recorded == (current.number, current.sha256) and stat[0] == current.bytes):
            self._download(current)
            self._write_sidecar(current)
            stat = self._stat()
        assert stat is not None
        self._synced = (current.number, *stat)

    def _publish(self, cur, current: Generation | None, always: bool = False) -> None:
        """Upload the local copy as the next generation if it changed (`always`: a restore, whose
        rebuilt file may equal the lost one byte for byte)."""
        stat = self._stat()
        if stat is None or self._synced is None or (self._synced[1], self._synced[2]) == stat:
            return  # nothing written
        digest = file_sha256(self.cache_path)
        if current is not None and digest == current.sha256 and not always:
            self._synced = (current.number, *stat)
            return
        number = (current.number if current else 0) + 1
        self.fs.makedirs(f"{self.root}/generations", exist_ok=True)
        self.fs.put_file(str(self.cache_path), self.object_path(number))
        new = Generation(number, digest, stat[0])
        cur.execute(
            "INSERT INTO bench_warehouse_generations (url, generation, sha256, bytes) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (url) DO UPDATE SET generation = EXCLUDED.generation, sha256 = EXCLUDED.sha256, "
            "bytes = EXCLUDED.bytes, updated_at = now()",
            [self.url, new.number, new.sha256, new.bytes],
        )
        self._write_sidecar(new)
        self._synced = (number, *stat)
        for old in self.generations():
            if old <= number - KEEP_GENERATIONS:
                self.fs.rm(self.object_path(old))

    def _read_sidecar(self) -> tuple[int, str] | None:
        try:
            data = json.loads(self._sidecar().read_text())
        except (FileNotFoundError, ValueError):
            return None
        if data.get("url") != self.url:
            return None
        return int(data["generation"]), str(data["sha256"])

    def _write_sidecar(self, generation: Generation) -> None:
        self._sidecar().write_text(
            json.dumps({"url": self.url, "generation": generation.number, "sha256": generation.sha256})
        )

    def current(self) -> Generation | None:
        """The recorded current generation (read without taking a turn)."""
        cur = self._connection().cursor()
        cur.execute(RECORD_DDL)
        return self._record(cur)
