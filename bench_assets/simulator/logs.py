"""The simulator's request and billing logs: kept on disk, bounded, and never silently short.

A snapshot at scale sends the simulator hundreds of thousands of requests; kept in memory, even as
JSON text, their logs were a large part of the simulator's memory for records nobody reads
during a run. Each record is appended, as the JSON text `/_sim/requests` serves, to a temporary
file of the log's own (deleted when it is closed or the process ends); the process keeps only
where each kept record starts, 8 bytes a record. A log keeps at most `$BENCH_SIM_LOG_LIMIT`
records (default `DEFAULT_LOG_LIMIT`), the most recent ones: once the file holds twice that many,
the kept ones are copied to a fresh file, so the disk a log takes stays bounded too. A log that
had to drop records since the last reset does not pretend to be whole: reading it answers 507
with how many were dropped, unless the reader asks for what is left (`?partial=true`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from array import array
from typing import IO, Any

LOG_LIMIT_ENV = "BENCH_SIM_LOG_LIMIT"
# Far above what a test or a demo snapshot logs (a few thousand calls); on disk, at most twice
# this many records a log (sizes in benchmarks/README.md).
DEFAULT_LOG_LIMIT = 100_000


def encode(record: Any) -> bytes:
    """JSON exactly as starlette's JSONResponse writes it, so a log reads as it always did."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


class BoundedLog:
    """The last `limit` records, each appended to a temporary file as its JSON bytes, and how many
    older ones were dropped."""

    def __init__(self, limit: int = DEFAULT_LOG_LIMIT):
        self.limit = limit
        self.dropped = 0
        self._lock = threading.Lock()
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="bench-simulator-log-")  # noqa: SIM115 (lives as the log does)
        self._size = 0  # bytes written to the file
        # where each record in the file starts (each is written as "," + its JSON), oldest first;
        # the kept ones are the last `limit`
        self._starts = array("q")

    def append(self, record: dict[str, Any]) -> None:
        encoded = b"," + encode(record)
        with self._lock:
            if self.limit == 0:
                self.dropped += 1
                return
            if len(self._starts) >= self.limit:
                self.dropped += 1
            if len(self._starts) >= 2 * self.limit:
                self._keep_last(self.limit - 1)
            self._starts.append(self._size)
            self._file.write(encoded)
            self._size += len(encoded)

    def _keep_last(self, count: int) -> None:
        """Copy the last `count` records to a fresh file (the others are dropped already)."""
        first = self._starts[len(self._starts) - count] if count else self._size
        fresh: IO[bytes] = tempfile.TemporaryFile(prefix="bench-simulator-log-")  # noqa: SIM115 (replaces the log's file)
        self._file.seek(first)
        shutil.copyfileobj(self._file, fresh)
        self._file.close()
        self._file = fresh
        self._starts = array("q", (start - first for start in self._starts[len(self._starts) - count :]))
        self._size -= first

    def clear(self) -> None:
        with self._lock:
            self._file.seek(0)
            self._file.truncate()
            self._size = 0
            self._starts = array("q")
            self.dropped = 0

    def __len__(self) -> int:
        with self._lock:
            return min(len(self._starts), self.limit)

    def json(self) -> bytes:
        """The records kept, as one JSON array."""
        with self._lock:
            kept = min(len(self._starts), self.limit)
            if not kept:
                return b"[]"
            self._file.seek(self._starts[len(self._starts) - kept])
            written = self._file.read()  # the records, each after a comma
            self._file.seek(0, 2)  # appends go on at the end
        return b"[" + written[1:] + b"]"

    def records(self) -> list[dict[str, Any]]:
        return json.loads(self.json())
