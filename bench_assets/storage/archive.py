"""The raw-response archive of one vendor partition: a DuckDB file owned by one process.

Each attempt is committed as soon as it is archived (`PartitionArchive.save` groups the attempts
that finish together into one commit), so a crash loses at most the calls in flight; a process
killed mid-run leaves a write-ahead log that DuckDB replays when the file is next opened. What a
failed write leaves instead of a file DuckDB can open (a full disk: 0 or 4,096 bytes) is cleared
when the archive is next opened (`storage.file_health.clear_unusable`), so it blocks no later run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.storage.file_health import clear_unusable
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Connector, direct_connection


class PartitionArchive:
    """The raw-response archive of one snapshot x vendor partition: a DuckDB file owned by one process.

    Each attempt is one committed INSERT, so it is durable the moment it is archived; a process
    killed mid-run leaves a write-ahead log that DuckDB replays when the file is next opened.
    """

    def __init__(
        self,
        path: Path,
        snapshot_id: str,
        vendor: str,
        connector: Connector = direct_connection,
        also_to: Callable[[list[dict[str, Any]]], None] | None = None,
    ):
        """`also_to` copies each committed group of attempts somewhere durable beyond this machine
        (the lake's archive segments) before they count as archived."""
        path.parent.mkdir(parents=True, exist_ok=True)
        # what a failed write left here, cleared (None: nothing was), for the run's log
        self.cleared = clear_unusable(path)
        self.also_to = also_to
        self.path = path
        self.snapshot_id = snapshot_id
        self.vendor = vendor
        self._opened = ExitStack()
        self.con = self._opened.enter_context(connector(str(path)))
        # Small single-row transactions: DuckDB's worker threads would spin after each one (several
        # times the CPU of the insert itself), so this archive runs on one thread.
        self.con.execute("SET threads = 1")
        self.con.execute(TABLES["raw_responses"].create_sql())
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"archive-{vendor}")
        self._pending: list[tuple[dict[str, Any], asyncio.Future]] = []
        self._flushing = False

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self.con.close()
        self._opened.close()

    def settled(self) -> set[tuple[str, str]]:
        rows = self.con.execute(
            "SELECT query_id, capability FROM raw_responses WHERE snapshot_id = ? AND vendor = ? AND final",
            [self.snapshot_id, self.vendor],
        ).fetchall()
        return {(q, c) for q, c in rows}

    def attempts_so_far(self) -> dict[tuple[str, str], int]:
        rows = self.con.execute(
            "SELECT query_id, capability, max(attempt) FROM raw_responses WHERE snapshot_id = ? AND vendor = ? "
            "GROUP BY 1, 2",
            [self.snapshot_id, self.vendor],
        ).fetchall()
        return {(q, c): n for q, c, n in rows}

    def append(self, row: dict[str, Any]) -> None:
        self._insert([row])

    def _insert(self, rows: list[dict[str, Any]]) -> None:
        """One statement for the whole group, committed on its own (a statement is atomic): DuckDB
        spends a fixed CPU cost on each statement and each commit, whatever it holds, so BEGIN, an
        INSERT per row and COMMIT would pay it once per row."""
        cols = list(rows[0])
        one = f"({', '.join('?' for _ in cols)})"
        self.con.execute(
            f"INSERT INTO raw_responses ({', '.join(cols)}) VALUES {', '.join([one] * len(rows))}",
            [row[c] for row in rows for c in cols],
        )
        if self.also_to is not None:
            self.also_to(rows)

    async def save(self, row: dict[str, Any]) -> None:
        """Archive one attempt; returns once it is committed. Attempts that finish while a commit
        is under way are committed together in the next one (group commit: one sync to disk for
        many responses), on a writer thread, so the event loop never waits on the disk."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append((row, future))
        if not self._flushing:
            self._flushing = True
            self._flush_task = asyncio.ensure_future(
                self._flush()
            )  # kept: a task only referenced by the loop may be collected
        await future

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await loop.run_in_executor(self._writer, self._insert, [row for row, _ in batch])
                except Exception as exc:  # every waiter learns its row was not archived
                    for _, future in batch:
                        future.set_exception(exc)
                else:
                    for _, future in batch:
                        future.set_result(None)
        finally:
            self._flushing = False

    def counts(self) -> tuple[int, dict[str, int]]:
        """The attempts archived, and the final ones by HTTP status ("no response" when none came)."""
        rows = self.con.execute(
            "SELECT coalesce(CAST(http_status AS VARCHAR), 'no response'), count(*) FILTER (WHERE final), count(*) "
            "FROM raw_responses WHERE snapshot_id = ? AND vendor = ? GROUP BY 1 ORDER BY 1",
            [self.snapshot_id, self.vendor],
        ).fetchall()
        return sum(n for _, _, n in rows), {status: finals for status, finals, _ in rows if finals}

    def frame(self) -> pd.DataFrame:
        return self.con.execute(
            "SELECT * FROM raw_responses WHERE snapshot_id = ? AND vendor = ? ORDER BY query_id, capability, attempt",
            [self.snapshot_id, self.vendor],
        ).df()
