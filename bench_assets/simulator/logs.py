"""The simulator's request and billing logs: bounded, and never silently short.

A snapshot at scale sends the simulator hundreds of thousands of requests; kept as dicts, their
logs held much of its memory. Each record is now kept as its JSON text (what `/_sim/requests`
serves anyway), and a log keeps at most `$BENCH_SIM_LOG_LIMIT` records (default
`DEFAULT_LOG_LIMIT`), the most recent ones. A log that had to drop records since the last reset
does not pretend to be whole: reading it answers 507 with how many were dropped, unless the
reader asks for what is left (`?partial=true`).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from typing import Any

LOG_LIMIT_ENV = "BENCH_SIM_LOG_LIMIT"
# Far above what a test or a demo snapshot logs (a few thousand calls), and small enough that the
# two logs, full, stay a modest part of the simulator's memory (sizes in benchmarks/README.md).
DEFAULT_LOG_LIMIT = 100_000


def encode(record: Any) -> bytes:
    """JSON exactly as starlette's JSONResponse writes it, so a log reads as it always did."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


class BoundedLog:
    """The last `limit` records, each kept as its JSON bytes, and how many older ones were dropped."""

    def __init__(self, limit: int = DEFAULT_LOG_LIMIT):
        self.limit = limit
        self._records: deque[bytes] = deque(maxlen=limit)
        self.dropped = 0
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        encoded = encode(record)
        with self._lock:
            if len(self._records) == self.limit:
                self.dropped += 1
            self._records.append(encoded)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self.dropped = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def json(self) -> bytes:
        """The records kept, as one JSON array."""
        with self._lock:
            return b"[" + b",".join(self._records) + b"]"

    def records(self) -> list[dict[str, Any]]:
        return json.loads(self.json())
